"""The benchmarks' test photographs: views of the colour photographs scikit-image ships (no download).

Light to import (numpy and PIL): benchmarks/data_prep.py's conversion workers import their main script.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from PIL import Image


def sample_photos() -> list[np.ndarray]:
    """The colour photographs scikit-image ships with its wheel (no download): real photographic content."""
    import skimage.data

    d = skimage.data
    left, right, _ = d.stereo_motorcycle()
    named = [
        d.astronaut,
        d.chelsea,
        d.coffee,
        d.hubble_deep_field,
        d.immunohistochemistry,
        d.retina,
        d.rocket,
    ]
    return [load() for load in named] + [left, right]


def photo_views(
    rng: np.random.Generator, photos: list[np.ndarray], count: int, size: tuple[int, int] = (500, 375)
) -> Iterator[np.ndarray]:
    """`count` different views of `size` (default 500x375: random 4:3 window at 50-100 % scale, resized
    bicubic, random flip) of the photos; at camera sizes (4032x3024) they are upscaled."""
    for i in range(count):
        photo = photos[i % len(photos)]
        h, w = photo.shape[:2]
        scale = rng.uniform(0.5, 1.0)
        ch = int(min(h, w * 3 / 4) * scale)
        cw = int(ch * 4 / 3)
        y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        view = Image.fromarray(photo[y : y + ch, x : x + cw]).resize(size, Image.Resampling.BICUBIC)
        if rng.uniform() < 0.5:
            view = view.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        yield np.asarray(view)


def mosaic(rng: np.random.Generator, photos: list[np.ndarray], size: tuple[int, int]) -> np.ndarray:
    """A `size` image tiled with 256x256 crops of the photos at their own resolution: photographic detail
    down to the pixel, as a camera's full-resolution photo has and an upscaled one lacks."""
    width, height = size
    out = np.zeros((height, width, 3), np.uint8)
    for y in range(0, height, 256):
        for x in range(0, width, 256):
            photo = photos[rng.integers(len(photos))]
            top, left = rng.integers(0, photo.shape[0] - 256), rng.integers(0, photo.shape[1] - 256)
            tile = photo[top : top + 256, left : left + 256][: height - y, : width - x]
            out[y : y + tile.shape[0], x : x + tile.shape[1]] = tile
    return out
