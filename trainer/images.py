"""How images are stored: RGB JPEG, aspect ratio kept, shorter side = the image size S.

No margin is added around the SxS square the model sees: every extra stored pixel is JPEG data the training
pipeline must entropy-decode, and that decoding is what bounds its rate (benchmarks/input_pipeline.py).
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

JPEG_QUALITY = 95


class UnreadableImage(Exception):
    """The bytes are not an image PIL can decode."""


def storage_size(width: int, height: int, shorter: int) -> tuple[int, int]:
    """(width, height) with the shorter side equal to `shorter` and the aspect ratio kept."""
    scale = shorter / min(width, height)
    return max(shorter, round(width * scale)), max(shorter, round(height * scale))


def to_stored_jpeg(image: bytes | np.ndarray, image_size: int) -> tuple[bytes, int, int]:
    """Decodes (bytes) or takes (uint8 HxWx3 array) an image; returns (jpeg, height, width) as stored."""
    try:
        if isinstance(image, np.ndarray):
            pil = Image.fromarray(image)
        else:
            pil = Image.open(io.BytesIO(image))
            pil.load()
            # Phone photos are stored sideways with an EXIF orientation tag; store them as viewers show them.
            pil = ImageOps.exif_transpose(pil)
        pil = pil.convert("RGB")
    # DecompressionBombError is not an OSError: without it one huge file would abort the whole data set.
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError) as exc:
        raise UnreadableImage(str(exc)) from exc
    width, height = storage_size(pil.width, pil.height, image_size)
    if (width, height) != pil.size:
        pil = pil.resize((width, height), Image.Resampling.BICUBIC, reducing_gap=3.0)
    out = io.BytesIO()
    # Optimized Huffman tables: smaller records that decode faster (see benchmarks/input_pipeline.py).
    pil.save(out, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return out.getvalue(), height, width
