"""Waiting for one job of any kind: polling, deadlines, the dollar cap, cancelling, and how it ended."""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Callable

from infra.dynamic.polling import poll_until
from infra.vertex.capacity.quotas import quota_page
from infra.vertex.lifecycle import cap as cost_cap
from infra.vertex.lifecycle import error_classes, restarts
from infra.vertex.lifecycle.errors import JobError, JobGone, job_failure_hint
from infra.vertex.lifecycle.kind import Kind, Runner, Ticker
from infra.vertex.lifecycle.request import Placed
from infra.vertex.lifecycle.status import JobStatus

# Time on top of the job's running-time cap (which Vertex enforces itself) before the provider cancels it.
DEADLINE_GRACE_SECONDS = 600.0
# How often a waiting create re-reads its deadline, which moves when the job starts running.
DEADLINE_RECHECK_SECONDS = 300.0
# How long delete (and a timeout's cancel) waits for a cancelled job to reach a terminal state.
CANCEL_WAIT_SECONDS = 900.0
# A FLEX_START job's scheduling.maxWaitDuration defaults to 1 day, and 0 waits indefinitely
# (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws, read 2026-11-22, and
# aiplatform_v1.Scheduling.max_wait_duration's doc).
FLEX_START_DEFAULT_WAIT_SECONDS = 24 * 3600
# Time after max_wait_seconds before the provider cancels a still-queued FLEX_START job: Vertex ends the wait
# itself, and this machine's clock may run ahead of the job's create_time.
FLEX_START_WAIT_GRACE_SECONDS = 600.0

Say = Callable[[str], None]


def queue_limit_seconds(placed: Placed) -> float:
    """How long a job may wait to start: max_wait_seconds (Vertex's default 1 day; 0: indefinitely) for
    FLEX_START, else queue_timeout_seconds."""
    if placed.flex_start:
        wait = placed.request.common.max_wait_seconds
        return FLEX_START_DEFAULT_WAIT_SECONDS if wait is None else wait or math.inf
    return placed.request.queue_timeout_seconds


def queue_deadline_seconds(placed: Placed) -> float:
    """When the provider cancels a job that has not started, after its creation: its queue limit, plus
    grace for FLEX_START, so that Vertex, not the provider, ends a Dynamic Workload Scheduler wait."""
    return queue_limit_seconds(placed) + (FLEX_START_WAIT_GRACE_SECONDS if placed.flex_start else 0.0)


class QueueTimeout(JobError):
    """A job that did not start in time and was cancelled (`status`, now terminal): another shape may run."""

    def __init__(self, message: str, status: JobStatus) -> None:
        super().__init__(message, status=status)
        self.queued = status  # never None, unlike JobError.status


def timestamp(iso_time: str) -> float:
    try:
        return datetime.datetime.fromisoformat(iso_time).timestamp()
    except ValueError:
        return time.time()


def deadline(kind: Kind, status: JobStatus, placed: Placed) -> float:
    """Wall-clock time after which a live job has overrun: its queue limit (FLEX_START: max_wait_seconds plus
    grace) after creation until it starts, then its kind's running deadline. A PAUSED job runs nothing."""
    if status.state == "JOB_STATE_PAUSED":
        return math.inf
    run_end = kind.run_deadline(status, placed)
    if status.start_time:
        return math.inf if run_end is None else run_end  # None: the kind's job has no running-time cap
    queue_end = timestamp(status.create_time) + queue_deadline_seconds(placed)
    return queue_end if run_end is None else min(run_end, queue_end)


def poll(
    runner: Runner,
    status: JobStatus,
    interval: float,
    until: float,
    say: Say,
    ticker: Ticker | None = None,
) -> JobStatus:
    """Poll with backoff until the job is terminal or `until` passes; report state changes on stderr, and
    `ticker` the job's new log lines, heartbeat or finished trials after each poll."""

    def read(before: JobStatus) -> JobStatus:
        current = runner.get(before.name)
        if current is None:
            raise JobGone(
                f"Job {before.name} disappeared while being watched; was it deleted outside Pulumi?"
            )
        return current

    def seen(before: JobStatus, now: JobStatus) -> None:
        nonlocal ticker
        changed = now.state != before.state
        if changed and not now.terminal:
            say(f"{now.name}: {now.state}")
        if ticker is not None:
            try:
                ticker.tick(now)
            except Exception as exc:  # the log is a view of the job: it never ends the wait
                say(f"live log stopped ({type(exc).__name__}: {exc}); the job goes on")
                ticker = None
        if changed and now.terminal:
            say(f"{now.name}: {now.state}")  # after the last log lines that led to it

    return poll_until(status, read, lambda s: s.terminal, until, interval, seen)


def failure(kind: Kind, placed: Placed, status: JobStatus) -> JobError:
    """The error for a job that ended without succeeding: its error, the kind's details, a hint, the link."""
    error = status.error or "no error message was reported"
    request = placed.request
    project, region = request.project or "", placed.region or ""
    hint = (
        job_failure_hint(error, project, region, placed.spot, kind.quota_words()) if request.on_vertex else ""
    )
    return JobError(
        f"{kind.noun} {status.name} ({request.common.display_name}) ended {status.state}: {error}"
        f"{kind.failure_details(status)} {hint + ' ' if hint else ''}Details and logs: {status.console_url}",
        status=status,
    )


# How a Dynamic Workload Scheduler job ends when its max_wait_duration passes without machines is not
# documented (read 2026-11-26): "Schedule training jobs based on resource availability"
# (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws) says only how long it waits;
# aiplatform_v1 JobState has JOB_STATE_EXPIRED ("The job has expired."); Google's SDK
# (googleapis/python-aiplatform at 91cc8ce4, google/cloud/aiplatform/jobs.py _JOB_COMPLETE_STATES and
# _JOB_ERROR_STATES) ends its wait on SUCCEEDED, FAILED, CANCELLED or PAUSED and reports FAILED as the error,
# not EXPIRED; Vertex's predecessor ended such a wait by cancelling the job (AI Platform Training
# `scheduling.maxWaitTime`: "If the training job has not entered the RUNNING state after this duration, AI
# Platform Training cancels it", ml v1 REST reference). So any end of a FLEX_START job that never started is
# read as "no machines in time", whatever its state and wording; CANCELLED excepted, which only a person or
# the budget kill switch causes here (the provider's own cancel at the queue limit is QueueTimeout), and
# which must not start another shape.
FLEX_START_GIVE_WAY_STATES = frozenset({"JOB_STATE_FAILED", "JOB_STATE_EXPIRED"})


def never_started(placed: Placed, status: JobStatus) -> bool:
    """A FLEX_START job that ended (FAILED or EXPIRED) without ever starting: its wait ran out."""
    return placed.flex_start and status.state in FLEX_START_GIVE_WAY_STATES and not status.start_time


def gave_way(kind: Kind, status: JobStatus, placed: Placed | None = None) -> bool:
    """Ended for want of machines (a stockout, after Vertex's own retries), quota or a GPU offered there, or
    expired before it ran; with `placed`, also a FLEX_START job that never started: another shape may run."""
    failed, started = status.state == "JOB_STATE_FAILED", bool(status.start_time)
    return (
        restarts.lost_capacity(status)
        or (failed and error_classes.is_quota(status.error))
        or (failed and error_classes.not_offered(status.error) and not started)
        or (status.state == "JOB_STATE_EXPIRED" and not started)
        or (placed is not None and never_started(placed, status))
        or kind.gave_way_as_a_whole(status)
    )


def flex_start_reason(placed: Placed, status: JobStatus) -> str:
    """The attempt's reason for a FLEX_START job that ended without starting (never_started): no machines
    within its wait, never the trainer's failure; "" for any other end."""
    if not never_started(placed, status):
        return ""
    said = f" ({status.error})" if status.error else ""
    return (
        f"Dynamic Workload Scheduler found no machines within {queue_limit_name(placed)}: the job ended "
        f"{status.state} without starting{said}"
    )


def queue_limit_name(placed: Placed) -> str:
    key = "max_wait_seconds" if placed.flex_start else "queue_timeout_seconds"
    return f"{key}={queue_limit_seconds(placed)}"


def overrun_message(kind: Kind, placed: Placed, status: JobStatus) -> str:
    """Why a live job was cancelled: it never started within its queue limit, or ran too long."""
    job = f"{kind.noun} {status.name} ({placed.request.common.display_name})"
    if status.start_time:
        return (
            f"{job} ran past {kind.overrun_limit(placed)} and was cancelled (now {status.state}). "
            f"Details and logs: {status.console_url}"
        )
    pools = ", ".join(pool.machines() for pool in placed.pools)
    project, spot = placed.request.project, placed.spot
    wait_key = "maxWaitSeconds" if placed.flex_start else "queueTimeoutSeconds"  # the stack config key
    return (
        f"{job} did not start within {queue_limit_name(placed)} and was cancelled (now {status.state}). "
        f"Likely cause: no free quota for {pools} in project {project}, region {placed.region}"
        f"{' or no Spot VM capacity there (spot: true)' if spot else ''}. Fix: request {kind.quota_words()} "
        f"at {quota_page(project)}, try other regions (stack config key fallbackRegions)"
        f"{', set spot: false' if spot else ''}, add fallback shapes (stack config key fallbacks), or allow "
        f"a longer wait with the stack config key {wait_key}. Details: {status.console_url}"
    )


def cancel_and_wait(runner: Runner, status: JobStatus, interval: float, say: Say) -> JobStatus:
    """Cancel a live job and wait (CANCEL_WAIT_SECONDS at most) for it to be terminal."""
    runner.cancel(status.name)
    return poll(runner, status, interval, time.time() + CANCEL_WAIT_SECONDS, say)


def _cancel_overrun(kind: Kind, runner: Runner, status: JobStatus, placed: Placed, say: Say) -> JobError:
    say(f"{status.name} overran its deadline ({status.state}); cancelling it")
    ended = cancel_and_wait(runner, status, placed.request.poll_interval_seconds, say)
    if not ended.terminal:
        # Another shape would run beside it, on the same checkpoints and bill: stop here instead.
        return JobError(
            f"{kind.noun} {ended.name} was cancelled at its queue limit but is still {ended.state} "
            f"{CANCEL_WAIT_SECONDS:.0f}s later, so no other shape was submitted (two jobs would share its "
            f"checkpoints and both be billed). Check {ended.console_url}; once it has ended, run `pulumi up` "
            "again."
        )
    if ended.start_time:  # it may have started between the last poll and the cancel
        return JobError(overrun_message(kind, placed, ended), status=ended)
    return QueueTimeout(overrun_message(kind, placed, ended), ended)


def wait_attempt(kind: Kind, runner: Runner, status: JobStatus, placed: Placed, say: Say) -> JobStatus:
    """One attempt to its terminal state, its log on stderr; cancelled past its deadline or dollar cap."""
    ticker = kind.ticker(placed, status, say)
    interval = placed.request.poll_interval_seconds
    while not status.terminal:
        # The deadline moves when the job starts (or resumes) running: poll a while, then look at it again.
        until = min(
            deadline(kind, status, placed),
            time.time() + DEADLINE_RECHECK_SECONDS,
            cost_cap.reach_time(placed, status),
        )
        status = poll(runner, status, interval, until, say, ticker)
        if not status.terminal and cost_cap.reached(placed, status):
            return cost_cap.cancel(status, placed, lambda s: cancel_and_wait(runner, s, interval, say), say)
        if not status.terminal and time.time() >= deadline(kind, status, placed):
            raise _cancel_overrun(kind, runner, status, placed, say)
    return status


def wait(kind: Kind, runner: Runner, status: JobStatus, placed: Placed, say: Say) -> JobStatus:
    """Wait for one job to end; raise unless it succeeded (or its dollar cap stopped it)."""
    status = wait_attempt(kind, runner, status, placed, say)
    if status.state != "JOB_STATE_SUCCEEDED" and not cost_cap.stopped(placed, status):
        raise failure(kind, placed, status)
    return status


def stop_and_delete(runner: Runner, id_: str, interval: float, say: Say) -> None:
    """Cancel a live job, wait until it is terminal, then delete it; a job already gone counts as done."""
    status = runner.get(id_)
    if status is None:
        return
    if not status.terminal:
        say(f"cancelling {id_} ({status.state})")
        try:
            status = cancel_and_wait(runner, status, interval, say)
        except JobGone:
            # Deleted meanwhile (the console, the kill switch): what delete wanted.
            say(f"{id_} was deleted while cancelling")
            return
        if not status.terminal:
            raise JobError(
                f"Job {id_} is still {status.state} {CANCEL_WAIT_SECONDS:.0f}s after cancelling; "
                f"check {status.console_url} and run `pulumi destroy` again."
            )
    runner.delete(id_)
    say(f"deleted {id_}")
