"""The attempts of one job across its chain of shapes: the loop that tries them (`try_shapes`), the records it
keeps (the contract's `attempts` outputs), and the lines and paragraph it says."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from infra.vertex.capacity.machines import FLEX_START_ACCELERATORS
from infra.vertex.capacity.placement import DWS_DOC, Shape
from infra.vertex.capacity.quotas import quota_page
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.request import JobRequest
from infra.vertex.lifecycle.restarts import Attempt
from infra.vertex.lifecycle.status import JobStatus

# Going round the whole chain again (capacity_deadline_seconds): the gap before pass n+1 grows from 60 s by
# x1.6 up to 300 s, as SkyPilot's managed jobs back off between recovery attempts (ARCHITECTURE.md, "Peers on
# capacity", review of 2026-11); each gap is drawn within +-20% of it (jitter: ours), so that stacks that
# stocked out together do not submit together.
BACKOFF_FIRST_SECONDS = 60.0
BACKOFF_FACTOR = 1.6
BACKOFF_MAX_SECONDS = 300.0
BACKOFF_JITTER = 0.2


def job_shape(status: JobStatus, request: JobRequest) -> tuple[int, Shape]:
    """The shape a job ran on, from the job itself (else the home region), and its attempt label's index;
    only a job that carries no shape is looked up by that index in the current chain."""
    index = min(Attempt.of(status).shape, len(request.chain) - 1)
    if status.shape is None:
        return index, request.chain[index]
    return index, replace(status.shape, region=status.shape.region or request.home)


def resume_index(status: JobStatus, request: JobRequest) -> int:
    """Where the chain goes on from an adopted job: its own shape's place in the current (maybe edited)
    chain, else the place its label names."""
    index, shape = job_shape(status, request)
    return request.chain.index(shape) if shape in request.chain else index


@dataclass(frozen=True)
class AttemptRecord:
    """One submitted job (or one shape skipped without a job): the contract's `attempts` entry."""

    shape_index: int
    shape: Shape
    job_name: str
    state: str
    reason: str
    passes: int = 1  # which pass round the chain it was made in (try_shapes sets it)

    def as_output(self) -> dict[str, Any]:
        return {"job_name": self.job_name, **self.shape.as_dict(), "state": self.state, "reason": self.reason}


@dataclass
class ShapeResult:
    """What running one shape gave: its records, the last job's status, whether to try the next shape, and
    the `error` to raise when this shape's failure is final, or when it was the only shape."""

    records: list[AttemptRecord]
    status: JobStatus | None = None
    move_on: bool = False
    error: JobError | None = None


def one_line(text: str) -> str:
    """API texts may hold newlines: a move is one line and the final error one paragraph."""
    return " ".join(text.split())


def _label(shape: Shape, across: bool) -> str:
    return shape.where() if across else str(shape)


def move_line(left: Shape, reason: str, following: Shape) -> str:
    """The one stderr line for a move: the shape left, why, the shape tried next (with their regions when
    the move crosses regions)."""
    across = left.region != following.region
    return f"leaving {_label(left, across)}: {one_line(reason)}; trying next: {_label(following, across)}"


def exhausted_message(
    request: JobRequest,
    records: Sequence[AttemptRecord],
    kind: str = "Training job",
    quotas: str = "the custom_model_training quotas",
    advice: str | None = None,
) -> str:
    """One paragraph when every shape gave way: each attempt with its reason, how many passes round the chain
    were made (capacity_deadline_seconds), and what to do (`advice`; default: a training job's options)."""
    passes = max((r.passes for r in records), default=1)
    where: list[str | None] = list(dict.fromkeys(r.shape.region for r in records if r.shape.region))
    where = where or [request.region]
    across = len(where) > 1
    tried = "; ".join(
        f"{n}. {_label(r.shape, across)} {'(' + r.job_name + ') ' if r.job_name else ''}{r.state}: "
        f"{one_line(r.reason)}"
        for n, r in enumerate(records, 1)
    )
    rounds = (
        f" {passes} passes round the chain were made before capacity_deadline_seconds "
        f"{int(request.capacity_deadline_seconds)} ran out."
        if passes > 1
        else ""
    )
    advice = advice or (  # a training job's (or study's) options
        f"request {quotas} for these shapes at {quota_page(request.project)} (new projects start at 0; Spot "
        "and FLEX_START use the Preemptible quotas), add fallbacks (stack config key `fallbacks`) with other "
        "machines or on-demand VMs, use FLEX_START (Dynamic Workload Scheduler: the job waits in a queue for "
        f"{', '.join(sorted(FLEX_START_ACCELERATORS))}; {DWS_DOC}), allow a longer wait "
        "(queueTimeoutSeconds, maxWaitSeconds), add regions (stack config key `fallbackRegions`), keep "
        "trying for longer (capacityDeadlineSeconds), or point the job at a reservation "
        "(reservationAffinity; docs/training-job-resource.md)."
    )
    return (
        f"{kind} {request.common.display_name} could not get machines in {', '.join(map(str, where))}: every "
        f"shape was tried.{rounds} {tried}. What to do: {advice}"
    )


def backoff_seconds(gone: int, draw: Callable[[float, float], float] = random.uniform) -> float:
    """The gap after `gone` passes (1, 2, ...): 60 s x1.6 per pass up to 300 s, with jitter."""
    gap = min(BACKOFF_FIRST_SECONDS * BACKOFF_FACTOR ** (gone - 1), BACKOFF_MAX_SECONDS)
    return gap * draw(1.0 - BACKOFF_JITTER, 1.0 + BACKOFF_JITTER)


def pass_line(passes: int, tried: int, gap: float, left: float) -> str:
    """The one stderr line between two passes round the chain."""
    return (
        f"pass {passes}: all {tried} shapes gave way; trying the chain again in {gap:.0f}s "
        f"({left:.0f}s left of capacity_deadline_seconds)"
    )


@dataclass(frozen=True)
class Deadline:
    """How long to keep going round the chain (capacity_deadline_seconds; 0: one pass), and the clock and
    sleep it uses (injected by tests)."""

    seconds: float = 0.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    draw: Callable[[float, float], float] = random.uniform

    @classmethod
    def of(cls, request: JobRequest) -> Deadline:
        return cls(request.capacity_deadline_seconds)


def try_shapes(
    chain: Sequence[Shape],
    start: int,
    run: Callable[[int, Shape], ShapeResult],
    say: Callable[[str], None],
    exhausted: Callable[[list[AttemptRecord]], Exception],
    deadline: Deadline | None = None,
) -> tuple[int, ShapeResult, list[AttemptRecord]]:
    """Run chain[start:] in order until a shape does not give way; return its index, result and all records;
    while `deadline` leaves time, go round the whole chain again after backoff_seconds."""
    # One shape at a time: `run` returns once its job has ended or given way, so two jobs are never live.
    deadline = deadline or Deadline()
    ends = deadline.clock() + deadline.seconds
    records: list[AttemptRecord] = []
    passes = 0
    while True:
        passes += 1
        for index in range(start, len(chain)):
            try:
                result = run(index, chain[index])
            except JobError as exc:  # a final failure: it carries every attempt, this call's first
                exc.records = [*records, *exc.records]
                raise
            records.extend(replace(record, passes=passes) for record in result.records)
            if not result.move_on:
                return index, result, records
            if index + 1 < len(chain):
                say(move_line(chain[index], result.records[-1].reason, chain[index + 1]))
        gap = backoff_seconds(passes, deadline.draw)
        left = ends - deadline.clock()
        if left <= gap:
            break
        say(pass_line(passes, len(chain) - start, gap, left))
        deadline.sleep(gap)
        start = 0
    # A chain of one shape that gave way on one pass raises that shape's own error: nothing else was tried.
    if passes == 1 and len(chain) - start == 1 and result.error is not None:
        result.error.records = records
        raise result.error
    raise exhausted(records)


def current_record(request: JobRequest, status: JobStatus) -> AttemptRecord:
    """The attempt a status is, on the shape the job itself carries (job_shape)."""
    index, shape = job_shape(status, request)
    return AttemptRecord(index, shape, status.name, status.state, "")


def carried_attempts(stored: dict[str, Any], current: AttemptRecord) -> list[dict[str, Any]]:
    """The stored `attempts` with the current job's entry brought up to date (appended when missing)."""
    attempts = list(stored.get("attempts") or [])
    names = [a.get("job_name") for a in attempts]
    if current.job_name in names:
        attempts[names.index(current.job_name)] = current.as_output()
        return attempts
    return [*attempts, current.as_output()]
