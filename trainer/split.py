"""Deterministic, class-balanced train/valid split."""

from __future__ import annotations

import random
from collections import defaultdict

from trainer.sources import Item


def split_items(items: list[Item], valid_fraction: float, seed: int) -> dict[str, list[Item]]:
    """Each class contributes round(n * valid_fraction) items to valid; both splits come out shuffled.

    Depends only on the items' keys and labels and the seed, never on listing order.
    """
    by_class: dict[int, list[Item]] = defaultdict(list)
    for item in sorted(items, key=lambda it: it.key):
        by_class[item.label].append(item)
    rng = random.Random(seed)
    train: list[Item] = []
    valid: list[Item] = []
    for label in sorted(by_class):
        group = by_class[label]
        rng.shuffle(group)
        n_valid = round(len(group) * valid_fraction)
        if valid_fraction > 0 and len(group) > 1:
            n_valid = min(max(n_valid, 1), len(group) - 1)  # every class appears in both splits
        valid += group[:n_valid]
        train += group[n_valid:]
    rng.shuffle(train)  # shards mix classes, so a small shuffle buffer is enough at train time
    rng.shuffle(valid)
    return {"train": train, "valid": valid}


def given_split(train: list[Item], valid: list[Item], seed: int) -> dict[str, list[Item]]:
    """A dataset's own train/validation splits, each shuffled by key and seed (so shards mix classes)."""
    rng = random.Random(seed)
    splits = {"train": sorted(train, key=lambda it: it.key), "valid": sorted(valid, key=lambda it: it.key)}
    for items in splits.values():
        rng.shuffle(items)
    return splits
