"""How an item's image is fetched: picklable loaders that the conversion's worker processes run.

Module-level functions bound with functools.partial pickle by reference, so a worker gets a path or an index,
not a closure. This module stays light to import (no TensorFlow unless a URI is read): every worker
imports it.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

# What a loader returns: encoded bytes, or a generated image's pixels.
Data = TypeVar("Data", bound=bytes | np.ndarray)
# Ellipse colour per class in generated images: warm, cool, then more for tests with more classes.
PALETTE = ((220, 90, 40), (40, 90, 220), (60, 200, 60), (220, 200, 40), (160, 60, 200))


def read_file(path: str) -> bytes:
    """A local file, or a gs:// (any TensorFlow filesystem) URI; a failed read is an OSError either way,
    FileNotFoundError for a file that is not there (TensorFlow's errors do not pickle back from a worker)."""
    if "://" not in path:
        with open(path, "rb") as f:
            return f.read()
    import tensorflow as tf  # only workers that read URIs pay for it

    try:
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    except tf.errors.NotFoundError as exc:
        raise FileNotFoundError(f"cannot read {path}: {exc.message}") from exc
    except tf.errors.PermissionDeniedError as exc:
        raise PermissionError(f"cannot read {path}: {exc.message}") from exc
    except tf.errors.OpError as exc:
        raise OSError(f"cannot read {path}: {exc.message}") from exc


def constant(data: Data) -> Data:
    """Bytes already in memory (a tfds example, a file read ahead)."""
    return data


def gone(reason: str) -> bytes:
    """A file that was listed but could not be found when read ahead: the conversion's missing file."""
    raise FileNotFoundError(reason)


def synthetic(index: int, label: int, size: int, seed: int) -> np.ndarray:
    """Generated image number `index`: the same pixels for the same (seed, index) in any process."""
    return synthetic_image(np.random.default_rng([seed, index]), label, size)


def synthetic_image(rng: np.random.Generator, label: int, size: int) -> np.ndarray:
    """A non-square image with an ellipse of the class's PALETTE colour (0 warm, 1 cool, ...), anywhere."""
    height = size
    width = int(size * rng.uniform(1.0, 1.5))  # non-square, so the aspect-ratio path is exercised
    image = rng.normal(110, 35, (height, width, 3))
    yy, xx = np.mgrid[0:height, 0:width]
    cy, cx = rng.uniform(0.3, 0.7) * height, rng.uniform(0.3, 0.7) * width
    ry, rx = rng.uniform(0.2, 0.4) * height, rng.uniform(0.2, 0.4) * width
    inside = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0
    colour = np.array(PALETTE[label]) + rng.normal(0, 20, 3)
    image[inside] = colour + rng.normal(0, 15, (int(inside.sum()), 3))
    return np.clip(image, 0, 255).astype(np.uint8)
