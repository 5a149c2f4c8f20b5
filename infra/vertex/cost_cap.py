"""The dollar cap of a job (`max_cost_usd`): when its running cost reaches the cap, the job is cancelled.

Running cost = list price per hour of the shape (infra/vertex/pricing.py) x running time of all attempts
(infra/vertex/restarts.py): what Vertex bills for machines, not disk or storage. Nothing bills while a job is
queued. The cancelled job's checkpoints stay in its output directory, so `pulumi up` with a larger cap
replaces it with a job that resumes from them. Without a price the cap cannot be enforced; check says so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from infra.vertex import pricing, spec
from infra.vertex.errors import JobError
from infra.vertex.heartbeat import duration_text
from infra.vertex.restarts import Attempt
from infra.vertex.status import JobStatus

# A cap reached within this many dollars counts as reached (float sums of prices).
_TOLERANCE_USD = 1e-9
# While a capped job waits to start, the wait loop looks again this often, so the cap's clock starts on time.
QUEUED_RECHECK_SECONDS = 60.0


def cap_usd(props: Mapping[str, Any]) -> float | None:
    cap = props.get("max_cost_usd")
    return float(cap) if cap is not None and props.get("runner") == "vertex" else None


def hourly_usd(props: Mapping[str, Any]) -> float | None:
    """List price per hour of this attempt's shape, all pools and replicas."""
    return pricing.shape_hourly(
        props["region"], props["worker_pools"], pricing.props_strategy(props), props.get("project")
    )


def spent_usd(props: Mapping[str, Any], status: JobStatus) -> float | None:
    hourly = hourly_usd(props)
    return None if hourly is None else hourly * Attempt.of(status).total_seconds(status) / 3600.0


def reached(props: Mapping[str, Any], status: JobStatus) -> bool:
    cap, spent = cap_usd(props), spent_usd(props, status)
    return cap is not None and spent is not None and spent >= cap - _TOLERANCE_USD


def reach_time(props: Mapping[str, Any], status: JobStatus) -> float:
    """When the running attempt's cost reaches the cap (wall clock); inf without a cap or a price."""
    cap, hourly = cap_usd(props), hourly_usd(props)
    spent = spent_usd(props, status)
    if cap is None or not hourly or spent is None or status.terminal:
        return math.inf
    if not status.start_time:
        return time.time() + QUEUED_RECHECK_SECONDS
    return time.time() + max(0.0, cap - spent) * 3600.0 / hourly


def paragraph(props: Mapping[str, Any], status: JobStatus) -> str:
    """The one paragraph that says the cap stopped the job, what it spent and how to go on."""
    attempts = Attempt.of(status).number
    seconds = Attempt.of(status).total_seconds(status)
    return (
        f"Training job {status.name} ({props.get('display_name')}) was cancelled because its running cost "
        f"reached max_cost_usd USD {cap_usd(props):.2f}: USD {spent_usd(props, status):.2f} at list "
        f"price USD {hourly_usd(props):.2f}/h for {duration_text(seconds)} of running time over {attempts} "
        f"attempt{'s' if attempts > 1 else ''} (now {status.state}). Its checkpoints stay in "
        f"{spec.output_dirs(props['base_output_dir'])['AIP_CHECKPOINT_DIR']}: `pulumi up` with a larger "
        f"maxCostUsd starts it again from them. Details and logs: {status.console_url}"
    )


def stopped(props: Mapping[str, Any], status: JobStatus) -> bool:
    """The job ended CANCELLED with its running cost at the cap: the cap stopped it."""
    return status.state == "JOB_STATE_CANCELLED" and reached(props, status)


def outputs(props: Mapping[str, Any], status: JobStatus) -> dict[str, Any]:
    """`cost_cap_reached` and the paragraph as `error`, for a job the cap stopped."""
    if not stopped(props, status):
        return {}
    return {"cost_cap_reached": True, "error": paragraph(props, status)}


def replaces(olds: Mapping[str, Any], changed: list[str]) -> list[str]:
    """A job the cap stopped runs again (resuming) when its cap changes; other cap changes are in place."""
    return ["max_cost_usd"] if olds.get("cost_cap_reached") and "max_cost_usd" in changed else []


def cancel(
    status: JobStatus,
    props: Mapping[str, Any],
    cancel_job: Callable[[str], None],
    wait: Callable[[JobStatus], JobStatus],
    say: Callable[[str], None],
) -> JobStatus:
    """Cancel a job whose cost reached its cap and wait until it is terminal."""
    say(f"{status.name}: running cost reached max_cost_usd USD {cap_usd(props):.2f}; cancelling it")
    cancel_job(status.name)
    ended = wait(status)
    if not ended.terminal:
        raise JobError(
            f"Job {status.name} reached max_cost_usd and was cancelled, but is still {ended.state}; check "
            f"{ended.console_url}."
        )
    say(paragraph(props, ended))
    return ended


def summary(outputs_: Mapping[str, Any]) -> str | None:
    """`USD 0.42 of max_cost_usd USD 5.00` for the closing line, when both are known."""
    cap, spent = outputs_.get("max_cost_usd"), outputs_.get("estimated_cost_usd")
    if cap is None or spent is None:
        return None
    return f"USD {float(spent):.2f} of max_cost_usd USD {float(cap):.2f}"
