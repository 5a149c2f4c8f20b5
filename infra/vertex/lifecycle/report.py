"""The `attempts` every job kind reports: the attempt a status is, and stored attempts brought up to date."""

from __future__ import annotations

from typing import Any

from infra.vertex.capacity import placement
from infra.vertex.capacity.placement import AttemptRecord
from infra.vertex.lifecycle.restarts import running_seconds
from infra.vertex.lifecycle.status import JobStatus


def current_record(props: dict[str, Any], status: JobStatus) -> AttemptRecord:
    """The attempt a status is, on the shape the job itself carries (placement.job_shape)."""
    index, shape = placement.job_shape(status, props)
    return AttemptRecord(index, shape, status.name, status.state, "", running_seconds(status))


def carried_attempts(stored: dict[str, Any], current: AttemptRecord) -> list[dict[str, Any]]:
    """The stored `attempts` with the current job's entry brought up to date (appended when missing)."""
    attempts = list(stored.get("attempts") or [])
    names = [a.get("job_name") for a in attempts]
    if current.job_name in names:
        attempts[names.index(current.job_name)] = current.as_output()
        return attempts
    return [*attempts, current.as_output()]
