"""CustomJobProvider: the Pulumi dynamic provider that runs a training job and tears it down.

Pickled by reference into every stack's state: keep this module's path and the class name as they are.
It holds no state; runners (and their gRPC clients) are made inside each method.
"""

from __future__ import annotations

import datetime
import math
import sys
import time
from typing import Any

from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    ConfigureRequest,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from infra.host_errors import plain_errors
from infra.preview_inputs import changed_inputs
from infra.vertex import cost_cap, cost_preview, experiments, placement, restarts, run_record, spec, spend
from infra.vertex.errors import JobError, JobGone, is_training_quota, job_failure_hint, names_training_quota
from infra.vertex.placement import AttemptRecord, Shape, ShapeResult
from infra.vertex.quotas import shortfall
from infra.vertex.run_report import carried_attempts, current_record, run_outputs, summary_line
from infra.vertex.runners import Runner, runner_for
from infra.vertex.status import JobStatus
from infra.vertex.watch import Watcher, watcher

# Time on top of the job's running-time cap (which Vertex enforces itself) before the provider cancels it.
DEADLINE_GRACE_SECONDS = 600.0
# How often a waiting create re-reads its deadline, which moves when the job starts running.
DEADLINE_RECHECK_SECONDS = 300.0
# How long delete (and a timeout's cancel) waits for a cancelled job to reach a terminal state.
CANCEL_WAIT_SECONDS = 900.0
POLL_CAP_SECONDS = 60.0
POLL_GROWTH = 1.5


def log(props: dict[str, Any], message: str) -> None:
    # The provider's stderr reaches the Pulumi CLI.
    print(f"[{props.get('display_name', 'custom job')}] {message}", file=sys.stderr, flush=True)


def _outputs(
    props: dict[str, Any],
    status: JobStatus,
    records: list[AttemptRecord] | None = None,
    stored: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Complete outputs; `records` are the attempts this call saw, else `stored` (the outputs an earlier
    call saved: read and update) carries the earlier attempts over (their cost is on the job: spend.py)."""
    inputs = {k: props[k] for k in spec.INPUTS if k in props}
    current = current_record(props, status)
    shaped = placement.apply_shape(props, current.shape)
    stored = stored or {}
    attempts = [r.as_output() for r in records] if records else carried_attempts(stored, current)
    return {
        **inputs,
        "job_name": status.name,
        "state": status.state,
        "console_url": status.console_url,
        "model_dir": spec.model_dir(props["base_output_dir"]),
        "create_time": status.create_time,
        "start_time": status.start_time,
        "end_time": status.end_time,
        "error": status.error,
        "placement": current.shape.as_dict(),
        "attempts": attempts,
        **run_outputs(shaped, status, lambda message: log(props, message)),
        **cost_cap.outputs(shaped, status),
    }


def timestamp(iso_time: str) -> float:
    try:
        return datetime.datetime.fromisoformat(iso_time).timestamp()
    except ValueError:
        return time.time()


def _deadline(status: JobStatus, props: dict[str, Any]) -> float:
    """Wall-clock time after which a live job has overrun.

    Before it starts: queue_timeout_seconds (FLEX_START: max_wait_seconds plus grace) after creation. Once
    started: timeout_seconds (Vertex's `scheduling.timeout`, a cap on running time) plus grace after
    start_time. A PAUSED job runs nothing.
    """
    if status.state == "JOB_STATE_PAUSED":
        return math.inf
    if status.start_time:
        allowed = restarts.remaining_seconds(props, restarts.Attempt.of(status))
        return timestamp(status.start_time) + allowed + DEADLINE_GRACE_SECONDS
    return timestamp(status.create_time) + spec.queue_deadline_seconds(props)


def poll(
    runner: Runner, status: JobStatus, props: dict[str, Any], until: float, watch: Watcher | None = None
) -> JobStatus:
    """Poll with backoff until the job is terminal or `until` passes; report state changes on stderr.

    `watch` prints the job's new log lines and, while it waits for machines, a heartbeat after each poll.
    """
    interval = float(props["poll_interval_seconds"])
    cap = max(interval, POLL_CAP_SECONDS)
    while not status.terminal and time.time() < until:
        time.sleep(min(interval, max(0.0, until - time.time())))
        interval = min(interval * POLL_GROWTH, cap)
        current = runner.get(status.name)
        if current is None:
            raise JobGone(
                f"Job {status.name} disappeared while being watched; was it deleted outside Pulumi?"
            )
        changed = current.state != status.state
        if changed and not current.terminal:
            log(props, f"{current.name}: {current.state}")
        if watch is not None:
            try:
                watch.tick(current)
            except Exception as exc:  # the log is a view of the job: it never ends the wait
                log(props, f"live log stopped ({type(exc).__name__}: {exc}); the job goes on")
                watch = None
        if changed and current.terminal:
            log(props, f"{current.name}: {current.state}")  # after the last log lines that led to it
        status = current
    return status


def _failure(props: dict[str, Any], status: JobStatus) -> JobError:
    # Hook: a job that ended badly keeps its run.json too (run_record.py); `_finished` covers the rest.
    run_record.keep(_outputs(props, status), lambda message: log(props, message))
    error = status.error or "no error message was reported"
    hint = ""
    if props.get("runner") == "vertex":
        hint = job_failure_hint(error, props["project"], props["region"], bool(props.get("spot")))
    return JobError(
        f"Training job {status.name} ({props.get('display_name')}) ended {status.state}: {error} "
        f"{hint + ' ' if hint else ''}Details and logs: {status.console_url}"
    )


def _machines(pool: dict[str, Any]) -> str:
    kind = pool.get("accelerator_type")
    gpus = f" + {pool.get('accelerator_count')} x {kind}" if kind else ""
    return f"{pool.get('replica_count', 1)} x {pool.get('machine_type')}{gpus}"


class QueueTimeout(JobError):
    """A job that did not start in time and was cancelled (`status`, now terminal): another shape may run."""

    def __init__(self, message: str, status: JobStatus) -> None:
        super().__init__(message)
        self.status = status


def queue_limit_name(props: dict[str, Any]) -> str:
    key = "max_wait_seconds" if props.get("scheduling_strategy") == "FLEX_START" else "queue_timeout_seconds"
    return f"{key}={spec.queue_limit_seconds(props)}"


def _wait_key(props: dict[str, Any]) -> str:
    """The stack config key that sets how long this job may wait to start."""
    return "maxWaitSeconds" if props.get("scheduling_strategy") == "FLEX_START" else "queueTimeoutSeconds"


def _overrun(props: dict[str, Any], status: JobStatus) -> str:
    """Why a live job was cancelled: it never started within its queue limit, or ran too long."""
    job = f"Training job {status.name} ({props.get('display_name')})"
    if status.start_time:
        return (
            f"{job} ran past timeout_seconds={props['timeout_seconds']} plus {DEADLINE_GRACE_SECONDS:.0f}s "
            f"grace and was cancelled (now {status.state}). Details and logs: {status.console_url}"
        )
    pools = ", ".join(_machines(pool) for pool in props["worker_pools"])
    project, spot = props.get("project"), props.get("spot")
    return (
        f"{job} did not start within {queue_limit_name(props)} and was "
        f"cancelled (now {status.state}). Likely cause: no free quota for {pools} in project {project}, "
        f"region {props.get('region')}{' or no Spot VM capacity there (spot: true)' if spot else ''}. "
        "Fix: request the custom_model_training quota at "
        f"https://console.cloud.google.com/iam-admin/quotas?project={project}, use another region"
        f"{', set spot: false' if spot else ''}, add fallback shapes (stack config key fallbacks), or allow "
        f"a longer wait with the stack config key {_wait_key(props)}. Details: {status.console_url}"
    )


def _cancel_overrun(runner: Runner, status: JobStatus, props: dict[str, Any]) -> JobError:
    log(props, f"{status.name} overran its deadline ({status.state}); cancelling it")
    runner.cancel(status.name)
    ended = poll(runner, status, props, time.time() + CANCEL_WAIT_SECONDS)
    if not ended.terminal:
        # Another shape would run beside it, on the same checkpoints and bill: stop here instead.
        return JobError(placement.still_live_message(ended, CANCEL_WAIT_SECONDS))
    # Hook: a job cancelled past its deadline keeps its run.json too (run_record.py).
    run_record.keep(_outputs(props, ended), lambda message: log(props, message))
    if ended.start_time:  # it may have started between the last poll and the cancel
        return JobError(_overrun(props, ended))
    return QueueTimeout(_overrun(props, ended), ended)


def _submit(
    runner: Runner,
    props: dict[str, Any],
    attempt: restarts.Attempt,
    shape: Shape,
    carried: spend.Carried,
) -> JobStatus:
    """Submit the job on `shape`, labelled with the attempt and the cost carried from earlier attempts, and
    allowed the running time left."""
    # Hook: the job's experiment and run exist (in the region it is sent to) before the job names them.
    experiments.ensure(placement.apply_shape(props, shape), lambda message: log(props, message))
    job = spec.build_custom_job(props, shape)
    if attempt != restarts.Attempt(1, 0):
        job = restarts.resubmission(job, attempt, restarts.remaining_seconds(props, attempt))
        job.labels[spend.SPENT_LABEL] = carried.label
    status = runner.create(job)
    log(props, f"created {status.name} ({status.state}): {status.console_url}")
    note = cost_cap.submit_note(placement.apply_shape(props, shape), carried)
    if note:
        log(props, note)
    return status


def _resubmit(runner: Runner, ended: JobStatus, props: dict[str, Any], shape: Shape) -> JobStatus | None:
    """The next attempt of a job that lost its machines while running, on the same shape (it resumes from
    the same checkpoint directory), or None when the earlier attempts used up timeout_seconds."""
    attempt = restarts.Attempt.of(ended).next(ended)
    remaining = restarts.remaining_seconds(props, attempt)
    if remaining <= 0:
        log(props, f"{ended.name} lost its machines, but its attempts already ran timeout_seconds")
        return None
    delay = restarts.resubmit_delay(attempt)
    log(
        props,
        f"{ended.name} lost its machines ({ended.error}); submitting attempt {attempt.number} of "
        f"{1 + restarts.max_restarts(props)} in {delay:.0f}s, with {remaining}s of running time left; it "
        f"resumes from the checkpoints in {props['base_output_dir']}",
    )
    time.sleep(delay)
    return _submit(runner, props, attempt, shape, spend.after(placement.apply_shape(props, shape), ended))


def gave_way(status: JobStatus) -> bool:
    """Ended for want of machines (a stockout, after Vertex's own retries), of quota, or expired before it
    ever ran (a FLEX_START job that Vertex gave up on): another shape may run."""
    failed = status.state == "JOB_STATE_FAILED"
    expired = status.state == "JOB_STATE_EXPIRED" and not status.start_time
    return restarts.lost_capacity(status) or (failed and names_training_quota(status.error)) or expired


def _wait_shape(
    runner: Runner, status: JobStatus, props: dict[str, Any], index: int, shape: Shape
) -> ShapeResult:
    """Wait for one shape's job; resubmit it on this shape after a preemption while running (max_restarts).

    Moves on (no error raised) after a stockout, a quota failure or a queue timeout; raises for any other end.
    """
    shaped = placement.apply_shape(props, shape)
    records: list[AttemptRecord] = []

    def record(ended: JobStatus, reason: str) -> None:
        seconds = restarts.running_seconds(ended)
        records.append(AttemptRecord(index, shape, ended.name, ended.state, reason, seconds))

    while True:
        try:
            status = _wait_attempt(runner, status, shaped)
        except QueueTimeout as exc:
            record(exc.status, f"did not start within {queue_limit_name(shaped)}; cancelled")
            return ShapeResult(records, exc.status, move_on=True, error=exc)
        if status.state == "JOB_STATE_SUCCEEDED":
            record(status, "")
            return ShapeResult(records, status)
        if cost_cap.stopped(shaped, status):
            record(status, "running cost reached max_cost_usd; cancelled")
            return ShapeResult(records, status)
        if restarts.may_restart(shaped, status):
            record(status, f"preempted while running: {status.error}")
            resubmitted = _resubmit(runner, status, props, shape)
            if resubmitted is not None:
                status = resubmitted
                continue
            raise _failure(shaped, status)
        record(status, status.error or status.state)
        if gave_way(status):
            return ShapeResult(records, status, move_on=True, error=_failure(shaped, status))
        raise _failure(shaped, status)


def _wait(runner: Runner, status: JobStatus, props: dict[str, Any]) -> JobStatus:
    """Wait for one job to end; raise unless it succeeded (update: no new attempt can change the id)."""
    status = _wait_attempt(runner, status, props)
    if status.state != "JOB_STATE_SUCCEEDED" and not cost_cap.stopped(props, status):
        raise _failure(props, status)
    return status


def _wait_attempt(runner: Runner, status: JobStatus, props: dict[str, Any]) -> JobStatus:
    """One attempt to its terminal state, its log and heartbeat on stderr; cancelled past its deadline."""
    watch = watcher(props, status, lambda line: log(props, line))
    while not status.terminal:
        # The deadline moves when the job starts (or resumes) running: poll a while, then look at it again.
        until = min(
            _deadline(status, props),
            time.time() + DEADLINE_RECHECK_SECONDS,
            cost_cap.reach_time(props, status),
        )
        status = poll(runner, status, props, until, watch)
        if not status.terminal and cost_cap.reached(props, status):
            return cost_cap.cancel(
                status,
                props,
                runner.cancel,
                lambda s: poll(runner, s, props, time.time() + CANCEL_WAIT_SECONDS),
                lambda line: log(props, line),
            )
        if not status.terminal and time.time() >= _deadline(status, props):
            raise _cancel_overrun(runner, status, props)
    return status


def _finished(
    props: dict[str, Any],
    status: JobStatus,
    records: list[AttemptRecord] | None = None,
    stored: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The outputs of a job that was waited for, announced in one summary line."""
    outputs = _outputs(props, status, records, stored)
    log(props, summary_line(outputs, len(outputs["attempts"])))
    run_record.keep(outputs, lambda message: log(props, message))  # hook: the run's run.json
    return outputs


def _place(
    runner: Runner, props: dict[str, Any], adopted: JobStatus | None
) -> tuple[JobStatus, list[AttemptRecord]]:
    """Run the job on its primary shape, else on each fallback in turn (from an adopted job's shape on).

    A shape whose quota cannot hold it is skipped without a job; with `wait`, a job that stocks out, hits a
    quota or is still queued at its deadline gives way to the next shape. Without `wait`, the first job
    submitted is the answer. Each move is one stderr line; when every shape gave way, one paragraph.
    """
    chain = placement.shapes(props)
    pending = adopted
    spent = restarts.Attempt.of(adopted) if adopted is not None else restarts.Attempt(1, 0)
    carried = spend.Carried(0, 0)  # the cost of the attempts before the next submission

    def run(index: int, shape: Shape) -> ShapeResult:
        nonlocal pending, spent, carried
        status, pending = pending, None
        if status is None:
            shaped = placement.apply_shape(props, shape)
            skip = _skip_reason(shaped)
            if skip is not None:
                reason, error = skip
                return ShapeResult(
                    [AttemptRecord(index, shape, "", "SKIPPED", reason)], move_on=True, error=error
                )
            if restarts.remaining_seconds(props, spent) <= 0:
                raise JobError(
                    f"Training job {props['display_name']}: its earlier attempts already ran "
                    f"timeout_seconds={props['timeout_seconds']}; no time is left to try {shape}."
                )
            try:
                attempt = restarts.Attempt(1, spent.earlier_seconds, index)
                status = _submit(runner, props, attempt, shape, carried)
            except JobError as exc:
                if not is_training_quota(exc.api_error):
                    raise
                reason = f"CreateCustomJob refused for quota: {exc.api_error.message}"
                return ShapeResult(
                    [AttemptRecord(index, shape, "", "SKIPPED", reason)], move_on=True, error=exc
                )
        else:
            shape = placement.job_shape(status, props)[1]  # adopted: its own shape, whatever the chain says
        if not props["wait"]:
            return ShapeResult([current_record(props, status)], status)
        result = _wait_shape(runner, status, props, index, shape)
        spent = restarts.Attempt(1, int(restarts.Attempt.of(result.status).total_seconds(result.status)))
        carried = spend.after(placement.apply_shape(props, shape), result.status)
        return result

    start = 0 if adopted is None else placement.resume_index(adopted, props)
    _index, result, records = placement.try_shapes(
        chain,
        start,
        run,
        lambda line: log(props, line),
        lambda tried: JobError(placement.exhausted_message(props, tried)),
    )
    return result.status, records


def _skip_reason(shaped: dict[str, Any]) -> tuple[str, JobError] | None:
    """Why a shape cannot run here (its quota is too small), from the quota pre-check; None: submit it."""
    found = shortfall(shaped)
    return None if found is None else (found.reason, JobError(found.message))


def stop_and_delete(runner: Runner, id_: str, props: dict[str, Any]) -> None:
    """Cancel a live job, wait until it is terminal, then delete it; a job already gone counts as done."""
    status = runner.get(id_)
    if status is None:
        return
    if not status.terminal:
        log(props, f"cancelling {id_} ({status.state})")
        runner.cancel(id_)
        try:
            status = poll(runner, status, props, time.time() + CANCEL_WAIT_SECONDS)
        except JobGone:
            # Deleted meanwhile (the console, the kill switch): what delete wanted.
            log(props, f"{id_} was deleted while cancelling")
            return
        if not status.terminal:
            raise JobError(
                f"Job {id_} is still {status.state} {CANCEL_WAIT_SECONDS:.0f}s after cancelling; "
                f"check {status.console_url} and run `pulumi destroy` again."
            )
    runner.delete(id_)
    log(props, f"deleted {id_}")


class CustomJobProvider(ResourceProvider):
    """Create/read/update/delete a training job from the contract's snake_case props."""

    def configure(self, req: ConfigureRequest) -> None:
        # Only the dynamic-provider host calls configure, once per process.
        plain_errors()

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        props = spec.with_defaults(news)
        failures = [CheckFailure(prop, reason) for prop, reason in spec.validate(props)]
        if not failures:
            for line in cost_preview.preview_lines(props):  # what the job may cost, before it runs
                log(props, line)
        return CheckResult(props, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        olds, news = spec.with_defaults(olds), spec.with_defaults(news)
        changed = changed_inputs(olds, news, spec.INPUTS)
        replaces = [k for k in changed if k not in spec.IN_PLACE_INPUTS] + cost_cap.replaces(olds, changed)
        if replaces:
            expected = cost_preview.expected_line(olds)
            if expected:
                log(news, expected)
            # Delete first: two runs of one job would race on the same output directory and double the bill.
            return DiffResult(changes=True, replaces=replaces, delete_before_replace=True)
        return DiffResult(changes=bool(changed))

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = spec.with_defaults(props)
        runner = runner_for(props)
        adopted = runner.find_by_key(spec.job_key(props))
        if adopted is not None:
            log(props, f"adopting {adopted.name} ({adopted.state}), started earlier with the same inputs")
            shaped = placement.apply_shape(props, placement.job_shape(adopted, props)[1])
            note = cost_cap.submit_note(shaped, spend.Carried.of(adopted))
            if note:
                log(props, note)
        status, records = _place(runner, props, adopted)
        if props["wait"]:
            return CreateResult(status.name, _finished(props, status, records))
        return CreateResult(status.name, _outputs(props, status, records))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        props = spec.with_defaults(props)
        status = runner_for(props).get(id_)
        if status is None:
            return ReadResult("", {})
        return ReadResult(id_, _outputs(props, status, stored=props))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        props = spec.with_defaults(news)
        runner = runner_for(props)
        status = runner.get(id_)
        if status is None:
            raise JobError(
                f"Job {id_} no longer exists; run `pulumi refresh`, then `pulumi up` to run it again."
            )
        if props["wait"]:
            # An update cannot change the resource's id, so it cannot move to a new attempt: it reports.
            # Waited for under the rules of the shape it runs on (a FLEX_START fallback: max_wait_seconds).
            status = _wait(
                runner, status, placement.apply_shape(props, placement.job_shape(status, props)[1])
            )
            return UpdateResult(_finished(props, status, stored=olds))
        return UpdateResult(_outputs(props, status, stored=olds))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        props = spec.with_defaults(props)
        stop_and_delete(runner_for(props), id_, props)
