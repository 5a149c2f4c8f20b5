"""How images are stored: RGB JPEG, aspect ratio kept, shorter side = the image size S.

No margin is added around the SxS square the model sees: every extra stored pixel is JPEG data the training
pipeline must entropy-decode, and that decoding is what bounds its rate (benchmarks/input_pipeline.py).

A JPEG is decoded at the size that is kept: libjpeg scales the image by 1/2, 1/4 or 1/8 while it decodes
(DCT scaling, through Pillow's `Image.draft`), to no less than DECODE_MARGIN x the stored size, and the
result is resized as a fully decoded image would be. On a 12 MP photo stored at 224 px that is about a
fifth of the CPU time of a full decode (benchmarks/data_prep.py --camera).
"""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

JPEG_QUALITY = 95
# The scaled decode keeps at least this many times the stored shorter side, so the bicubic resize that follows
# still reduces by 2x or more and its filter, not the decoder's 8x8 block scaling, makes the stored pixels.
# Measured against a full decode (benchmarks/data_prep.py --quality, docs/trainer.md): a margin of 2 differs
# by 0.13-0.58 grey levels on average (at most 14); a margin of 1 by 0.32-2.51 (at most 62). Pillow's own
# `Image.thumbnail` asks `draft` for the same 2x (its default `reducing_gap=2.0`; PIL/Image.py, Pillow 13.0).
DECODE_MARGIN = 2.0
_ERRORS = (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError)


class UnreadableImage(Exception):
    """The bytes are not an image PIL can decode."""


def storage_size(width: int, height: int, shorter: int) -> tuple[int, int]:
    """(width, height) with the shorter side equal to `shorter` and the aspect ratio kept."""
    scale = shorter / min(width, height)
    return max(shorter, round(width * scale)), max(shorter, round(height * scale))


def decode_size(width: int, height: int, shorter: int, margin: float = DECODE_MARGIN) -> tuple[int, int]:
    """The least (width, height) to decode a width x height image at: shorter side >= shorter x margin.

    Aspect kept, so it holds for the image as stored in the file and as EXIF-rotated alike: a rotation
    swaps width and height, never the shorter side.
    """
    scale = shorter * margin / min(width, height)
    return math.ceil(width * scale), math.ceil(height * scale)


def decode(data: bytes, keep_shorter: int | None = None, margin: float = DECODE_MARGIN) -> Image.Image:
    """Encoded bytes as an upright RGB image; given `keep_shorter`, a JPEG is decoded scaled down towards it
    (`margin` x it), other formats in full. DecompressionBombError is not an OSError: it is caught here too,
    or one huge file would abort the whole data set."""
    try:
        pil = Image.open(io.BytesIO(data))
        if keep_shorter is not None:
            # On the image as the file stores it (before the EXIF rotation); a no-op for other formats.
            pil.draft("RGB", decode_size(pil.width, pil.height, keep_shorter, margin))
        pil.load()
        # Phone photos are stored sideways with an EXIF orientation tag; store them as viewers show them.
        return ImageOps.exif_transpose(pil).convert("RGB")
    except _ERRORS as exc:
        raise UnreadableImage(str(exc)) from exc


def resized(pil: Image.Image, image_size: int) -> Image.Image:
    """Shorter side = image_size, aspect kept (bicubic; box-reduced first where it shrinks more than 3x)."""
    width, height = storage_size(pil.width, pil.height, image_size)
    if (width, height) == pil.size:
        return pil
    return pil.resize((width, height), Image.Resampling.BICUBIC, reducing_gap=3.0)


def encoded(pil: Image.Image) -> bytes:
    out = io.BytesIO()
    # Optimized Huffman tables: smaller records that decode faster (see benchmarks/input_pipeline.py).
    pil.save(out, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return out.getvalue()


def to_stored_jpeg(image: bytes | np.ndarray, image_size: int) -> tuple[bytes, int, int]:
    """Decodes (bytes) or takes (uint8 HxWx3 array) an image; returns (jpeg, height, width) as stored."""
    if isinstance(image, np.ndarray):
        try:
            pil = Image.fromarray(image).convert("RGB")
        except _ERRORS as exc:
            raise UnreadableImage(str(exc)) from exc
    else:
        pil = decode(image, keep_shorter=image_size)
    pil = resized(pil, image_size)
    return encoded(pil), pil.height, pil.width
