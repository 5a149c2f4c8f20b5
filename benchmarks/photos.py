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


def photo_views(rng: np.random.Generator, photos: list[np.ndarray], count: int) -> Iterator[np.ndarray]:
    """`count` different 500x375 views (random 4:3 window at 50-100 % scale, random flip) of the photos."""
    for i in range(count):
        photo = photos[i % len(photos)]
        h, w = photo.shape[:2]
        scale = rng.uniform(0.5, 1.0)
        ch = int(min(h, w * 3 / 4) * scale)
        cw = int(ch * 4 / 3)
        y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        view = Image.fromarray(photo[y : y + ch, x : x + cw]).resize((500, 375), Image.Resampling.BICUBIC)
        if rng.uniform() < 0.5:
            view = view.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        yield np.asarray(view)
