"""A job's state as every runner reports it, and which states are live, terminal or adoptable."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from infra.vertex.capacity.placement import Shape

LIVE_STATES = frozenset(
    {
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_CANCELLING",
        "JOB_STATE_PAUSED",
        "JOB_STATE_UPDATING",
    }
)
TERMINAL_STATES = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)
# A job with the same key in one of these states is the job an interrupted `pulumi up` started: adopt it.
ADOPTABLE_STATES = (LIVE_STATES - {"JOB_STATE_CANCELLING"}) | {"JOB_STATE_SUCCEEDED"}


@dataclass(frozen=True)
class JobStatus:
    name: str
    state: str
    console_url: str
    error: str = ""
    create_time: str = ""
    start_time: str = ""
    end_time: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    # The shape the job carries (from its spec, its region from its name); None when the runner cannot say.
    shape: Shape | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


def seconds_between(start: str, end: str) -> float:
    """Seconds from one ISO time to another ('' end: now); 0 when it has not started."""
    if not start:
        return 0.0
    ended = datetime.datetime.fromisoformat(end) if end else datetime.datetime.now(datetime.UTC)
    return max(0.0, (ended - datetime.datetime.fromisoformat(start)).total_seconds())


def iso(value: datetime.datetime | None) -> str:
    return value.isoformat() if value else ""


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()
