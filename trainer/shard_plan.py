"""Which images go in which shard file, which replica writes it, and the fingerprint of the whole plan.

Shards are cut from each split's (seeded) order, so their names and contents do not depend on how many
workers or replicas write them; a re-run with another replica count still finds its finished shards.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from trainer.data_replicas import Replica
from trainer.metadata import SPLITS
from trainer.sources import Item


@dataclass(frozen=True)
class Shard:
    split: str
    index: int
    items: tuple[Item, ...]

    @property
    def name(self) -> str:
        return f"{self.split}-{self.index:05d}.tfrec"


def plan(splits: dict[str, list[Item]], shard_size: int) -> list[Shard]:
    """Every split cut into consecutive shards of `shard_size` items (the last one may be shorter)."""
    return [
        Shard(split, number, tuple(splits[split][start : start + shard_size]))
        for split in SPLITS
        for number, start in enumerate(range(0, len(splits[split]), shard_size))
    ]


def for_replica(shards: list[Shard], replica: Replica) -> list[Shard]:
    """Every `count`-th shard from the replica's number: the replicas' slices are disjoint and even."""
    return shards[replica.index :: replica.count]


def fingerprint(
    shards: list[Shard], settings: dict[str, object], stamps: Mapping[str, str] | None = None
) -> str:
    """Identifies a conversion: its settings and every shard's items (and, given their `stamps`, what each
    item's file holds); another source, setting or image content differs. Without stamps: the value earlier
    versions computed, so their data sets still count as this one."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for shard in shards:
        digest.update(shard.name.encode())
        for item in shard.items:
            digest.update(f"\0{item.key}\0{item.label}".encode())
            if stamps is not None:
                digest.update(f"\0{stamps[item.key]}".encode())
    return digest.hexdigest()[:16]
