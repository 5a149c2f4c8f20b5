"""How images are stored: RGB JPEG with the shorter side resized to the image size, aspect ratio kept."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, UnidentifiedImageError

JPEG_QUALITY = 95


class UnreadableImage(Exception):
    """The bytes are not an image PIL can decode."""


def storage_size(width: int, height: int, size: int) -> tuple[int, int]:
    """(width, height) with the shorter side equal to `size` and the aspect ratio kept."""
    scale = size / min(width, height)
    return max(size, round(width * scale)), max(size, round(height * scale))


def to_stored_jpeg(image: bytes | np.ndarray, size: int) -> tuple[bytes, int, int]:
    """Decodes (bytes) or takes (uint8 HxWx3 array) an image; returns (jpeg, height, width) as stored."""
    try:
        if isinstance(image, np.ndarray):
            pil = Image.fromarray(image)
        else:
            pil = Image.open(io.BytesIO(image))
            pil.load()
        pil = pil.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise UnreadableImage(str(exc)) from exc
    width, height = storage_size(pil.width, pil.height, size)
    if (width, height) != pil.size:
        pil = pil.resize((width, height), Image.Resampling.BICUBIC, reducing_gap=3.0)
    out = io.BytesIO()
    pil.save(out, format="JPEG", quality=JPEG_QUALITY)
    return out.getvalue(), height, width
