"""Cost keys: the dollar cap of each job (maxCostUsd), enforced by the job providers; the hourly ceiling of
a shape (maxHourlyUsd, also per fallback entry: infra/config/capacity.py); whether a shape without a sourced
price may run under them (allowUnpricedShapes). What they skip: infra/vertex/cost/limits.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.config.reader import NAMESPACE, ConfigError, Reader, positive

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


def set_on_stack(stack: str, key: str, example: str) -> str:
    """The command that sets `key` on this stack."""
    return f"run `pulumi config set --stack {stack} {NAMESPACE}:{key} {example}`"


def read_cost(read: Reader, stack: str) -> CostConfig:
    cap = read.number("maxCostUsd", None, float, "5")
    if cap is not None:
        positive("maxCostUsd", cap, "5")
    hourly = read.raw("maxHourlyUsd")
    if hourly is not None and (
        isinstance(hourly, bool) or not isinstance(hourly, int | float | str) or not _positive_number(hourly)
    ):
        raise ConfigError(
            "maxHourlyUsd",
            f"must be a positive number of US dollars per hour (a shape priced above it is skipped), got "
            f"{hourly!r}",
            set_on_stack(stack, "maxHourlyUsd", "2"),
        )
    allow = read.raw("allowUnpricedShapes")
    if allow is not None and not (isinstance(allow, bool) or str(allow).lower() in ("true", "false")):
        raise ConfigError(
            "allowUnpricedShapes",
            f"expected true or false (true: run shapes that have no sourced price under maxCostUsd and "
            f"maxHourlyUsd, their time uncounted), got {allow!r}",
            set_on_stack(stack, "allowUnpricedShapes", "true"),
        )
    return CostConfig(
        max_cost_usd=cap,
        max_hourly_usd=None if hourly is None else float(hourly),
        allow_unpriced_shapes=read.bool("allowUnpricedShapes", False),
    )


def _positive_number(value: int | float | str) -> bool:
    try:
        number = float(value)
    except ValueError:
        return False
    return number > 0 and number != float("inf")
