"""Cost keys: the dollar cap of each job (maxCostUsd), enforced by the job providers; the hourly ceiling of
a shape (maxHourlyUsd, also per fallback entry: infra/config/capacity.py); whether a shape without a sourced
price may run under them (allowUnpricedShapes). What they skip: infra/vertex/cost/limits.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.config.reader import Reader, positive

KEYS = ("maxCostUsd", "maxHourlyUsd", "allowUnpricedShapes")


@dataclass(frozen=True)
class CostConfig:
    # USD per job (data preparation and training each): cancelled when its running cost reaches it.
    max_cost_usd: float | None = None
    # USD per hour: a shape whose hourly price (every replica) is above it is skipped.
    max_hourly_usd: float | None = None
    # A shape with no sourced price runs anyway (its time uncounted by the cap); default: it is skipped.
    allow_unpriced_shapes: bool = False

    def job_args(self) -> dict[str, Any]:
        """The job inputs these keys give (None: left out, so stacks without them keep their inputs)."""
        return {
            "max_cost_usd": self.max_cost_usd,
            "max_hourly_usd": self.max_hourly_usd,
            "allow_unpriced_shapes": True if self.allow_unpriced_shapes else None,
        }


def read_cost(read: Reader) -> CostConfig:
    cap = read.number("maxCostUsd", None, float, "5")
    if cap is not None:
        positive("maxCostUsd", cap, "5")
    hourly = read.number("maxHourlyUsd", None, float, "2")
    if hourly is not None:
        positive("maxHourlyUsd", hourly, "2")
    allow = read.bool("allowUnpricedShapes", False)
    return CostConfig(max_cost_usd=cap, max_hourly_usd=hourly, allow_unpriced_shapes=allow)
