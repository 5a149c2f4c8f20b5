"""Placing a job of any kind: its primary shape, else each fallback in turn; a Spot preemption resubmits it.
Never two live jobs: the next shape is submitted only once the last job is terminal."""

from __future__ import annotations

import time

from google.api_core import exceptions as gexc

from infra.vertex.capacity import placement
from infra.vertex.capacity.placement import Shape
from infra.vertex.capacity.quotas import Shortfall, shortfall
from infra.vertex.cost import limits
from infra.vertex.lifecycle import attempts, error_classes, restarts, spend, waiting
from infra.vertex.lifecycle import cap as cost_cap
from infra.vertex.lifecycle.attempts import AttemptRecord, ShapeResult
from infra.vertex.lifecycle.errors import JobError, is_training_quota
from infra.vertex.lifecycle.kind import Kind, Runner
from infra.vertex.lifecycle.request import JobRequest, Placed
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.lifecycle.waiting import QueueTimeout, Say


def submit(
    kind: Kind,
    runner: Runner,
    placed: Placed,
    attempt: restarts.Attempt,
    carried: spend.Carried,
    say: Say,
) -> JobStatus:
    """Submit the job on its shape; say where it is and what its dollar cap counts."""
    kind.before_submit(placed, say)
    status = runner.create(kind.build(placed, attempt, carried))
    say(f"created {status.name} ({status.state}): {status.console_url}")
    request = placed.request
    moved = placement.tensorboard_note(
        placed.shape, request.region, request.common.tensorboard, request.common.output_dir
    )
    if moved:
        say(moved)
    note = cost_cap.submit_note(placed, carried)
    if note:
        say(note)
    return status


def _resubmit(kind: Kind, runner: Runner, ended: JobStatus, placed: Placed, say: Say) -> JobStatus | None:
    """The next attempt of a job that lost its machines while running, on the same shape (it resumes from
    the same checkpoint directory), or None when the earlier attempts used up timeout_seconds."""
    request = placed.request
    attempt = restarts.Attempt.of(ended).next(ended)
    remaining = restarts.remaining_seconds(request.common.timeout_seconds, attempt)
    if remaining <= 0:
        say(f"{ended.name} lost its machines, but its attempts already ran timeout_seconds")
        return None
    delay = restarts.resubmit_delay(attempt)
    say(
        f"{ended.name} lost its machines ({ended.error}); submitting attempt {attempt.number} of "
        f"{1 + request.max_restarts} in {delay:.0f}s, with {remaining}s of running time left; it "
        f"resumes from the checkpoints in {request.common.output_dir}"
    )
    time.sleep(delay)
    return submit(kind, runner, placed, attempt, spend.after(placed.rate, ended), say)


def wait_shape(kind: Kind, runner: Runner, status: JobStatus, placed: Placed, say: Say) -> ShapeResult:
    """Wait for one shape's job, resubmitted on this shape after a preemption while running (resumable); move
    on (no error raised) after a stockout, a quota failure or a queue timeout; raise for any other end."""
    records: list[AttemptRecord] = []

    def record(ended: JobStatus, reason: str) -> None:
        records.append(AttemptRecord(placed.index, placed.shape, ended.name, ended.state, reason))

    while True:
        try:
            status = waiting.wait_attempt(kind, runner, status, placed, say)
        except QueueTimeout as exc:
            record(exc.queued, f"did not start within {waiting.queue_limit_name(placed)}; cancelled")
            return ShapeResult(records, exc.queued, move_on=True, error=exc)
        if status.state == "JOB_STATE_SUCCEEDED":
            record(status, "")
            return ShapeResult(records, status)
        if cost_cap.stopped(placed, status):
            record(status, "running cost reached max_cost_usd; cancelled")
            return ShapeResult(records, status)
        if not (kind.resumable and restarts.may_restart(placed.request.max_restarts, status)):
            record(status, waiting.flex_start_reason(placed, status) or kind.ended_reason(status))
            if waiting.gave_way(kind, status, placed):
                return ShapeResult(records, status, move_on=True, error=waiting.failure(kind, placed, status))
            break
        record(status, f"preempted while running: {status.error}")
        resubmitted = _resubmit(kind, runner, status, placed, say)
        if resubmitted is None:
            break
        status = resubmitted
    raise _with(waiting.failure(kind, placed, status), records)


def _verdict(placed: Placed) -> limits.Verdict:
    """The attempt's shape under the job's limits (cost/limits.py), from what the attempt already derived
    (its price, its machines): asked before it submits."""
    request = placed.request
    if not request.on_vertex:
        return limits.Verdict(None, ())  # a local run bills nothing (and must not look for a price catalog)
    capped, top = request.max_cost_usd is not None, request.ceilings[placed.index]
    allowed = request.allow_unpriced_shapes
    return limits.judged(top, capped, allowed, placed.strategy, placed.rate, placed.unpriced_items)


def _skip(placed: Placed, reason: str, error: JobError) -> ShapeResult:
    """A shape given way without a job: its SKIPPED record, and the error if it was the only shape."""
    record = AttemptRecord(placed.index, placed.shape, "", "SKIPPED", reason)
    return ShapeResult([record], move_on=True, error=error)


def _skipped(kind: Kind, placed: Placed) -> ShapeResult | None:
    """A shape the price limits rule out (its reason names the key: the move line says key, shape and why),
    or one the quota pre-check says cannot run here (its quota is too small), as a skipped attempt."""
    found_limit = _verdict(placed)
    if found_limit.skipped is not None:
        reason = limits.skip_reason(found_limit)
        where = f"{kind.noun} {placed.request.common.display_name}: {placed.shape.where()}"
        return _skip(placed, reason, JobError(f"{where} skipped: {reason}"))
    found = quota_shortfall(kind, placed)
    return None if found is None else _skip(placed, found.reason, JobError(found.message))


def quota_shortfall(kind: Kind, placed: Placed) -> Shortfall | None:
    """The first quota too small for the job on its shape (capacity/quotas.py), or None: a local run holds
    no quota, and a kind without documented quota ids is not pre-checked (kind.quota_pools)."""
    needs = kind.quota_pools(placed) if placed.request.on_vertex else None
    if needs is None:
        return None
    return shortfall(placed.request.project or "", placed.region or "", needs, placed.strategy)


def _refusal(kind: Kind, exc: JobError) -> str | None:
    """Why Vertex refused the job on this shape when another may be accepted (a training quota, its GPU not
    offered there: Vertex judges that, not our dated table capacity/gpu_regions.py); None: final."""
    api = exc.api_error
    if api is None:
        return None
    if is_training_quota(api):
        return f"Create{kind.api_kind} refused for quota: {api.message}"
    if isinstance(api, gexc.InvalidArgument) and error_classes.not_offered(api.message or ""):
        return f"Create{kind.api_kind} refused: {api.message}"
    return None


def _with(error: JobError, records: list[AttemptRecord]) -> JobError:
    """The error with the attempts that led to it (attempts.try_shapes puts the earlier shapes' first)."""
    error.records = list(records)
    return error


def place(
    kind: Kind, request: JobRequest, adopted: JobStatus | None, say: Say
) -> tuple[JobStatus, list[AttemptRecord], Placed]:
    """Run the job on each shape of its chain in turn (from an adopted job's shape on) until one does not give
    way; return its job (without `wait`: the first submitted), every attempt's record and its Placed."""
    pending = adopted
    last: JobStatus | None = None  # the last job that ended: the run an exhausted chain records
    on: Placed | None = None  # the request on the shape of the last attempt
    spent = restarts.Attempt.of(adopted) if adopted is not None else restarts.Attempt(1, 0)
    carried = spend.Carried(0, 0)  # the cost of the attempts before the next submission

    def run(index: int, shape: Shape) -> ShapeResult:
        nonlocal pending, spent, carried, last, on
        status, pending = pending, None
        if status is None:
            placed = request.on(shape, index)
            runner = kind.runner(request, placed.region)
            skipped = _skipped(kind, placed)
            if skipped is not None:
                return skipped
            if kind.resumable and restarts.remaining_seconds(request.common.timeout_seconds, spent) <= 0:
                raise JobError(
                    f"{kind.noun} {request.common.display_name}: its earlier attempts already ran "
                    f"timeout_seconds={request.common.timeout_seconds}; no time is left to try {shape}."
                )
            try:
                attempt = restarts.Attempt(1, spent.earlier_seconds, index)
                status = submit(kind, runner, placed, attempt, carried, say)
            except JobError as exc:
                reason = _refusal(kind, exc)
                if reason is None:
                    raise
                return _skip(placed, reason, exc)
        else:
            # Adopted: its own shape, whatever the chain says, in the region its name says.
            placed = request.on(attempts.job_shape(status, request)[1], index)
            runner = kind.runner(request, request.job_region(status.name))
        on = placed
        if not request.wait:
            return ShapeResult([attempts.current_record(request, status)], status)
        result = wait_shape(kind, runner, status, placed, say)
        last = result.status or last
        if kind.resumable and result.status is not None:
            spent = restarts.Attempt(1, int(restarts.Attempt.of(result.status).total_seconds(result.status)))
            carried = spend.after(placed.rate, result.status)
        return result

    def exhausted(tried: list[AttemptRecord]) -> JobError:
        advice = kind.capacity_advice(request)
        message = attempts.exhausted_message(request, tried, kind.noun, kind.quota_words(), advice)
        return _with(JobError(message, status=last), tried)

    start = 0 if adopted is None else attempts.resume_index(adopted, request)
    _index, result, records = attempts.try_shapes(
        request.chain, start, run, say, exhausted, attempts.Deadline.of(request)
    )
    assert result.status is not None and on is not None  # a shape that did not give way ran a job
    return result.status, records, on
