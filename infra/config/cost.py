"""Cost keys: the dollar cap of each job (maxCostUsd), enforced by the CustomJob provider."""

from __future__ import annotations

from dataclasses import dataclass

from infra.config.reader import Reader, positive

KEYS = ("maxCostUsd",)


@dataclass(frozen=True)
class CostConfig:
    # USD per job (data preparation and training each): cancelled when its running cost reaches it.
    max_cost_usd: float | None = None


def read_cost(read: Reader) -> CostConfig:
    cap = read.number("maxCostUsd", None, float, "5")
    if cap is not None:
        positive("maxCostUsd", cap, "5")
    return CostConfig(max_cost_usd=cap)
