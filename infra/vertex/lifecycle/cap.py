"""The dollar cap of a job (`max_cost_usd`): when its running cost reaches the cap, the job is cancelled.

Running cost = every attempt's running time at the list price of the shape it ran on (spend.py, prices from
pricing.py): what Vertex bills for machines, not disk or storage; nothing bills while a job is queued. The
cancelled job's checkpoints stay in its output directory, so `pulumi up` with a larger cap replaces it with a
job that resumes from them; the new cap is a fresh allowance. A shape without a price is not run under a cap
(limits.py skips it) unless allow_unpriced_shapes, and then its time is not counted (check and submit_note say
so); a Spot or FLEX_START shape without a price of its own counts at the same shape's on-demand price, an
upper bound (pricing.shape_rate): the cap may stop it early, never late.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from infra.dynamic.polling import duration_text
from infra.vertex.lifecycle import restarts, spend
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.lifecycle.output_files import output_dirs
from infra.vertex.lifecycle.request import Placed
from infra.vertex.lifecycle.restarts import Attempt
from infra.vertex.lifecycle.status import JobStatus

# A cap reached within this many dollars counts as reached (float sums of prices).
_TOLERANCE_USD = 1e-9
# While a capped job waits to start, the wait loop looks again this often, so the cap's clock starts on time.
QUEUED_RECHECK_SECONDS = 60.0


def reached(placed: Placed, status: JobStatus) -> bool:
    cap = placed.request.max_cost_usd
    return cap is not None and spend.spent(placed.rate, status).usd >= cap - _TOLERANCE_USD


def reach_time(placed: Placed, status: JobStatus) -> float:
    """When the running attempt's cost reaches the cap (wall clock); inf without a cap or a price."""
    cap, hourly = placed.request.max_cost_usd, None if placed.rate is None else placed.rate.usd
    if cap is None or status.terminal:
        return math.inf
    left = cap - spend.spent(placed.rate, status).usd
    if left <= _TOLERANCE_USD:
        return time.time()
    if not hourly:
        return math.inf
    if not status.start_time:
        return time.time() + QUEUED_RECHECK_SECONDS
    return time.time() + left * 3600.0 / hourly


def submit_note(placed: Placed, carried: spend.Carried) -> str | None:
    """The one line that says what the cap cannot count on this shape, when a job is submitted on it."""
    cap = placed.request.max_cost_usd
    if cap is None:
        return None
    found = placed.rate
    if found is not None and found.bound:
        return (
            f"max_cost_usd USD {cap:.2f} counts this shape {found.text()}: the job may be stopped before it "
            "has really spent the cap"
        )
    if found is None:
        missing = placed.unpriced_items()
        return (
            f"max_cost_usd USD {cap:.2f} is not enforced while the job runs on this shape: no price for "
            f"{', '.join(missing) or 'an item'} (its running time is not counted toward the cap)"
        )
    if carried.unpriced:
        return (
            f"max_cost_usd USD {cap:.2f} counts USD {carried.usd:.2f} for the earlier attempts: some of "
            "their running time was on a shape with no price and is not counted"
        )
    return None


def paragraph(placed: Placed, status: JobStatus) -> str:
    """The one paragraph that says the cap stopped the job, what it spent and how to go on."""
    total, carried = spend.spent(placed.rate, status), spend.Carried.of(status)
    earlier = (
        f"USD {carried.usd:.2f} for {carried.attempts} earlier attempt(s), then " if carried.attempts else ""
    )
    rate = placed.rate.text() if placed.rate is not None else "no list price"
    unpriced = "; running time with no price is not counted" if total.unpriced else ""
    counted = "at most " if total.bound else ""
    request = placed.request
    where = request.common.output_dir
    if request.kind.resumable:  # a training job: it resumes from its checkpoints
        kept = (
            f"Its checkpoints stay in {output_dirs(where)['AIP_CHECKPOINT_DIR']}: "
            "`pulumi up` with a larger maxCostUsd starts it again from them"
        )
    else:  # a study or a batch prediction: no checkpoints, its output so far stays
        kept = f"What it wrote so far stays under {where}: `pulumi up` with a larger maxCostUsd runs it again"
    return (
        f"{request.kind.noun} {status.name} ({request.common.display_name}) was cancelled because its "
        f"running cost reached max_cost_usd USD {request.max_cost_usd:.2f}: {counted}USD {total.usd:.2f} at "
        f"list prices ({earlier}"
        f"{rate} for {duration_text(restarts.running_seconds(status))} on this shape{unpriced}), "
        f"{duration_text(Attempt.of(status).total_seconds(status))} of running time over {total.attempts} "
        f"attempt{'s' if total.attempts > 1 else ''} (now {status.state}). {kept}, with the new cap as a "
        f"fresh allowance. Details and logs: {status.console_url}"
    )


def stopped(placed: Placed, status: JobStatus) -> bool:
    """The job ended CANCELLED with its running cost at the cap: the cap stopped it."""
    return status.state == "JOB_STATE_CANCELLED" and reached(placed, status)


def replaces(olds: Mapping[str, Any], changed: list[str]) -> list[str]:
    """A job the cap stopped runs again (resuming) when its cap changes; other cap changes are in place."""
    return ["max_cost_usd"] if olds.get("cost_cap_reached") and "max_cost_usd" in changed else []


def cancel(
    status: JobStatus,
    placed: Placed,
    cancel_and_wait: Callable[[JobStatus], JobStatus],
    say: Callable[[str], None],
) -> JobStatus:
    """Cancel a job whose cost reached its cap and wait until it is terminal."""
    cap = placed.request.max_cost_usd
    say(f"{status.name}: running cost reached max_cost_usd USD {cap:.2f}; cancelling it")
    ended = cancel_and_wait(status)
    if not ended.terminal:
        raise JobError(
            f"Job {status.name} reached max_cost_usd and was cancelled, but is still {ended.state}; check "
            f"{ended.console_url}."
        )
    say(paragraph(placed, ended))
    return ended


def summary(outcome: Outcome[Any]) -> str | None:
    """`USD 0.42 of max_cost_usd USD 5.00` for the closing line, when both are known."""
    cap, spent = outcome.inputs.get("max_cost_usd"), outcome.own.estimated_cost_usd
    if cap is None or spent is None:
        return None
    return f"USD {float(spent):.2f} of max_cost_usd USD {float(cap):.2f}"
