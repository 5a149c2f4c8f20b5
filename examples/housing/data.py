"""Synthetic house sales: the same seed gives the same rows, so a run and its resume sees the same data."""

from __future__ import annotations

import numpy as np

FEATURES = ("area_m2", "rooms", "age_years", "distance_km")


def houses(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(features [rows, 4], price in thousands [rows, 1]): a smooth function of the features plus noise."""
    rng = np.random.default_rng(seed)
    area = rng.uniform(30, 250, rows)
    rooms = np.clip(np.round(area / 30 + rng.normal(0, 0.7, rows)), 1, 9)
    age = rng.uniform(0, 80, rows)
    distance = rng.uniform(0.5, 30, rows)
    price = 2.1 * area + 9 * rooms - 0.8 * age + 220 * np.exp(-distance / 8) + rng.normal(0, 12, rows)
    features = np.stack([area, rooms, age, distance], axis=1).astype("float32")
    return features, price.reshape(-1, 1).astype("float32")


def split(features: np.ndarray, target: np.ndarray, valid_fraction: float = 0.2) -> tuple:
    """The last `valid_fraction` of the rows (already in random order) for validation."""
    cut = int(len(features) * (1 - valid_fraction))
    return (features[:cut], target[:cut]), (features[cut:], target[cut:])
