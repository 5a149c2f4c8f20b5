"""What `infra.leftovers` found: one Item per leftover, what could not be read, and the exit code of both."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from infra.leftovers.prices import usd_text

# Exit codes (the contract): nothing bills, something bills, something could not be read.
NOTHING_BILLS, SOMETHING_BILLS, CANNOT_TELL = 0, 1, 2
DEPLOYED_MODEL = "DeployedModel"  # an Item's kind that bills every hour until undeployed (endpoints.py)


@dataclass(frozen=True)
class Item:
    """One leftover: what and where it is, its state, whether and what it bills, and how to remove it."""

    kind: str  # CustomJob, HyperparameterTuningJob, BatchPredictionJob, bucket, repository, ...
    name: str
    region: str
    state: str
    bills: bool
    cost: str  # what it costs, in words: "USD 0.02/month (...)", "no sourced price", "free (...)"
    remove: str  # the command that removes (or, for a job, stops) it
    monthly_usd: float | None = None  # where a sourced price gives one
    monthly_is_bound: bool = False  # monthly_usd is at most what it bills (a free tier it may fall under)
    hourly_usd: float | None = None  # a live job's, where a sourced price gives one
    hourly_is_bound: bool = False  # the on-demand price bounding a Spot or FLEX_START job
    price_source: str | None = None  # the page and the date it was read
    size_bytes: int | None = None
    live_job: bool = False  # a job `--cancel` stops

    def as_json(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass
class Found:
    """What one finder (one kind of leftover) read: its items, and what it could not read (each named)."""

    items: list[Item] = field(default_factory=list)
    cannot_tell: list[str] = field(default_factory=list)

    def add(self, other: Found) -> None:
        self.items += other.items
        self.cannot_tell += other.cannot_tell


def exit_code(found: Found) -> int:
    """2 when something could not be read (the answer is not known), else 1 when something bills, else 0."""
    if found.cannot_tell:
        return CANNOT_TELL
    return SOMETHING_BILLS if any(item.bills for item in found.items) else NOTHING_BILLS


def size_text(size: int) -> str:
    """Bytes in binary units, as Google's storage prices count them (GiB)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _hourly(jobs: list[Item]) -> str:
    """` (USD 1.24/h where priced)` over the jobs whose price is sourced; `at most` when one is a bound."""
    priced = [job for job in jobs if job.hourly_usd is not None]
    if not priced:
        return ""
    bound = "at most " if any(job.hourly_is_bound for job in priced) else ""
    where = "" if len(priced) == len(jobs) else " where priced"
    return f" ({bound}USD {sum(job.hourly_usd or 0.0 for job in priced):.2f}/h{where})"


def summary(stack: str, found: Found) -> str:
    """The closing line: how many items bill, their priced monthly total, what is free, what was not read."""
    billing = [i for i in found.items if i.bills]
    free = [i for i in found.items if not i.bills]
    jobs = [i for i in billing if i.live_job]
    served = [i for i in billing if i.kind == DEPLOYED_MODEL]
    stored = [i for i in billing if i not in jobs and i not in served]
    priced = [i.monthly_usd for i in stored if i.monthly_usd is not None]
    unpriced = [i for i in stored if i.monthly_usd is None]
    parts = []
    if billing:
        what = [f"{len(jobs)} live job(s) billing by the hour{_hourly(jobs)}"] if jobs else []
        if served:
            what.append(
                f"{len(served)} deployed model(s) billing every hour{_hourly(served)} (--undeploy stops them)"
            )
        monthly = len(stored)
        if monthly:
            bound = "at most " if any(i.monthly_is_bound for i in stored if i.monthly_usd) else ""
            total = f"{bound}{usd_text(sum(priced))}/month where priced" if priced else "no sourced price"
            extra = f", {len(unpriced)} with no sourced price" if priced and unpriced else ""
            what.append(f"{monthly} billing by the month ({total}{extra})")
        parts.append(f"{len(billing)} still bill: " + "; ".join(what))
    else:  # with something unread, zero is not known
        parts.append("nothing of what was read bills" if found.cannot_tell else "nothing bills")
    running = [i for i in free if i.live_job]
    if running:
        parts.append(f"{len(running)} live local job(s) (free; --cancel stops them)")
    if len(free) > len(running):
        parts.append(f"{len(free) - len(running)} free")
    if found.cannot_tell:
        parts.append(f"could not read {len(found.cannot_tell)}: " + "; ".join(found.cannot_tell))
    return f"Stack {stack}: " + ", ".join(parts) + "."


def table(items: Iterable[Item]) -> list[str]:
    """A header, then one aligned line per item: KIND NAME REGION STATE COST and the command removing it."""
    rows = [["KIND", "NAME", "REGION", "STATE", "COST", "REMOVE WITH"]]
    rows += [[i.kind, i.name, i.region, i.state, i.cost, i.remove] for i in items]
    if len(rows) == 1:
        return []
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    return ["  ".join([*(r[c].ljust(widths[c]) for c in range(5)), r[5]]).rstrip() for r in rows]
