"""The money a job's attempts spent, at the shape each one ran on.

Each attempt after the first carries SPENT_LABEL = "<cents>-<attempts>[-unpriced][-bound]": the list-price
cost of the attempts before it, how many there were, whether one of them ran on a shape with no price (its
time is then not counted: no shape is ever priced at another shape's rate), and whether some of it was counted
at the on-demand bound of a Spot or FLEX_START shape (pricing.shape_rate). So a fresh provider process (an
adopted job, read, update) knows an attempt's cost so far from the job alone; the dollar cap and
`estimated_cost_usd` both use `spent`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.vertex.cost import pricing
from infra.vertex.lifecycle import restarts
from infra.vertex.lifecycle.restarts import Attempt
from infra.vertex.lifecycle.status import JobStatus

SPENT_LABEL = "vertex_training_spent"
_SPENT = re.compile(r"(\d+)-(\d+)(-unpriced)?(-bound)?")


@dataclass(frozen=True)
class Carried:
    """What the attempts before this one cost."""

    cents: int  # their list-price cost, those with a price
    attempts: int  # how many were submitted
    unpriced: bool = False  # one of them ran on a shape with no price: `cents` counts less than was spent
    bound: bool = False  # some of `cents` is an on-demand bound: more than was spent

    @classmethod
    def of(cls, status: JobStatus) -> Carried:
        """From the job's label; a job without one (submitted before the label existed) that followed
        earlier attempts counts their time as unpriced."""
        match = _SPENT.fullmatch(status.labels.get(SPENT_LABEL, ""))
        if match:
            return cls(int(match[1]), int(match[2]), bool(match[3]), bool(match[4]))
        attempt = Attempt.of(status)
        return cls(0, attempt.number - 1, attempt.earlier_seconds > 0)

    @property
    def usd(self) -> float:
        return self.cents / 100.0

    @property
    def label(self) -> str:
        return (
            f"{self.cents}-{self.attempts}"
            + ("-unpriced" if self.unpriced else "")
            + ("-bound" if self.bound else "")
        )


@dataclass(frozen=True)
class Spent:
    """All attempts so far: the counted USD, and whether some running time could not be priced."""

    usd: float
    attempts: int
    unpriced: bool
    bound: bool = False  # part of `usd` is the on-demand bound of a Spot or FLEX_START shape: at most

    @property
    def known_usd(self) -> float | None:
        """The whole cost, or None when part of it has no price."""
        return None if self.unpriced else round(self.usd, 4)


def spent(hourly: pricing.Rate | None, status: JobStatus) -> Spent:
    """The earlier attempts' carried cost plus this attempt's running time at `hourly`, the rate of the
    shape it runs on (None: no price)."""
    carried = Carried.of(status)
    seconds = restarts.running_seconds(status)
    own = 0.0 if hourly is None else hourly.usd * seconds / 3600.0
    unpriced = carried.unpriced or (hourly is None and seconds > 0)
    bound = carried.bound or (hourly is not None and hourly.bound and seconds > 0)
    return Spent(carried.usd + own, carried.attempts + 1, unpriced, bound)


def after(hourly: pricing.Rate | None, ended: JobStatus) -> Carried:
    """What the next attempt carries once `ended` (run at `hourly`, its shape's rate) is over."""
    total = spent(hourly, ended)
    return Carried(round(total.usd * 100), total.attempts, total.unpriced, total.bound)
