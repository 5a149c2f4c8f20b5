"""TuningJobProvider: the Pulumi dynamic provider that runs a hyperparameter tuning study and tears it down.

Pickled by reference into every stack's state: keep this module's path and the class name as they are.
It shares the CustomJob provider's machinery: the trial job's props and checks (spec.py), the key label and
adoption, the quota pre-check, fallback shapes (placement.try_shapes), polling with backoff and state lines,
deadlines, errors, the emulator switch and retries (through the runners). It holds no state; runners are made
inside each method.
The CustomJob provider's polling, log prefix and timestamp helpers are imported as they are (underscored).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
from infra.vertex import cost_preview, placement, pricing, run_record, spec, tuning_spec
from infra.vertex.errors import JobError, is_training_quota, job_failure_hint, names_training_quota
from infra.vertex.heartbeat import duration_text
from infra.vertex.placement import AttemptRecord, Shape, ShapeResult
from infra.vertex.provider import (
    CANCEL_WAIT_SECONDS,
    DEADLINE_GRACE_SECONDS,
    DEADLINE_RECHECK_SECONDS,
    log,
    poll,
    queue_limit_name,
    stop_and_delete,
    timestamp,
)
from infra.vertex.provider import gave_way as job_gave_way
from infra.vertex.quotas import shortfall
from infra.vertex.restarts import names_capacity_loss
from infra.vertex.run_report import carried_attempts, current_record
from infra.vertex.trials import Trial, TuningStatus, best, newly_finished, parameters_text, trial_line
from infra.vertex.tuning_local_runner import LocalTuningRunner
from infra.vertex.tuning_vertex_runner import VertexTuningRunner

TuningRunner = LocalTuningRunner | VertexTuningRunner


def runner_for(props: dict[str, Any]) -> TuningRunner:
    """The runner these props ask for; made fresh for every provider call (never stored on the provider)."""
    if props.get("runner", "vertex") == "local":
        return LocalTuningRunner(props["base_output_dir"])
    return VertexTuningRunner(
        props["project"], props["region"], min(float(props["poll_interval_seconds"]), 1.0)
    )


@dataclass
class TrialReporter:
    """Called after every poll: one line per trial that finished since the last poll."""

    metric_id: str
    say: Callable[[str], None]
    seen: tuple[Trial, ...] = field(default_factory=tuple)

    def tick(self, status: TuningStatus) -> None:
        for trial in newly_finished(self.seen, status.trials):
            self.say(trial_line(trial, self.metric_id))
        self.seen = status.trials


def running_seconds(status: TuningStatus) -> float:
    """Machine time of all trials together (what the study bills), not the study's wall-clock time."""
    return sum(t.running_seconds() for t in status.trials)


def outputs(
    props: dict[str, Any],
    status: TuningStatus,
    records: list[AttemptRecord] | None = None,
    stored: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Complete outputs; `records` are the studies this call submitted or skipped, else `stored` (an earlier
    call's outputs) carries them over. Duration and cost are the trials of this study, at its shape."""
    inputs = {k: props[k] for k in tuning_spec.INPUTS if k in props}
    top = best(status.trials, props["goal"])
    seconds = running_seconds(status)
    current = current_record(props, status)
    attempts = [r.as_output() for r in records] if records else carried_attempts(stored or {}, current)
    shaped = placement.apply_shape(props, current.shape)
    out = {
        **inputs,
        "job_name": status.name,
        "state": status.state,
        "console_url": status.console_url,
        "create_time": status.create_time,
        "start_time": status.start_time,
        "end_time": status.end_time,
        "error": status.error,
        "trials": [t.to_output() for t in status.trials],
        "best_trial": top.id if top else "",
        "best_parameters": dict(top.parameters) if top else {},
        "best_metric": top.metric if top else None,
        "duration_seconds": round(seconds, 1),
        "placement": current.shape.as_dict(),
        "attempts": attempts,
    }
    if props.get("runner") == "vertex":
        strategy = pricing.props_strategy(shaped)
        cost = pricing.estimate_usd(
            props["region"], shaped["worker_pools"], strategy, seconds, props.get("project")
        )
        if cost is not None:
            out["estimated_cost_usd"] = cost
    return out


def summary_line(out: dict[str, Any]) -> str:
    """E.g. `JOB_STATE_SUCCEEDED: 4 trials (1 failed), 6m 2s of trial time; best trial 3 ...; USD 0.21`."""
    trials = out["trials"]
    failed = sum(t["state"] == "INFEASIBLE" for t in trials)
    took = duration_text(out["duration_seconds"])
    parts = [f"{out['state']}: {len(trials)} trials ({failed} failed), {took} of trial time"]
    if out["best_trial"]:
        shown = parameters_text(out["best_parameters"])
        parts.append(
            f"best trial {out['best_trial']}: {shown} -> {out['metric_id']} {out['best_metric']:.4f}"
        )
    if "estimated_cost_usd" in out:
        kind = out["placement"]["scheduling_strategy"]
        parts.append(f"estimated cost USD {out['estimated_cost_usd']:.2f} ({kind} list prices)")
    return "; ".join(parts)


def deadline(status: TuningStatus, props: dict[str, Any]) -> float:
    """Wall-clock time after which a live study has overrun: every wave of trials may wait for machines (the
    trial shape's queue limit: max_wait_seconds plus grace for FLEX_START) and then run timeout_seconds (the
    trial job's scheduling.timeout), plus grace."""
    per_wave = spec.queue_deadline_seconds(props) + props["timeout_seconds"] + DEADLINE_GRACE_SECONDS
    return timestamp(status.create_time) + tuning_spec.waves(props) * per_wave


def _failure(props: dict[str, Any], status: TuningStatus) -> JobError:
    # Hook: a study that ended badly keeps its run.json too (run_record.py).
    run_record.keep(outputs(props, status), lambda message: log(props, message))
    error = status.error or "no error message was reported"
    hint = ""
    if props.get("runner") == "vertex":
        hint = job_failure_hint(error, props["project"], props["region"], bool(props.get("spot")))
    failed = [t for t in status.trials if t.state == "INFEASIBLE"]
    trials = (
        f" Failed trials: {'; '.join(f'trial {t.id}: {t.reason}' for t in failed[:3])}." if failed else ""
    )
    return JobError(
        f"Tuning job {status.name} ({props.get('display_name')}) ended {status.state}: {error}.{trials} "
        f"{hint + ' ' if hint else ''}Details and logs: {status.console_url}"
    )


class StudyQueued(JobError):
    """A study that never started within its queue limit and was cancelled (`status`, now terminal)."""

    def __init__(self, message: str, status: TuningStatus) -> None:
        super().__init__(message)
        self.status = status


def _until(status: TuningStatus, props: dict[str, Any]) -> float:
    """When a live study has overrun: before it starts, at its trial shape's queue limit (as a CustomJob);
    once it runs, at `deadline`."""
    if status.start_time:
        return deadline(status, props)
    return min(deadline(status, props), timestamp(status.create_time) + spec.queue_deadline_seconds(props))


def _cancel_overrun(runner: TuningRunner, status: TuningStatus, props: dict[str, Any]) -> JobError:
    log(props, f"{status.name} overran its deadline ({status.state}); cancelling it")
    runner.cancel(status.name)
    ended = poll(runner, status, props, time.time() + CANCEL_WAIT_SECONDS)
    if not ended.terminal:
        # A study on another shape would run beside it and both be billed: stop here instead.
        return JobError(placement.still_live_message(ended, CANCEL_WAIT_SECONDS))
    # Hook: a study cancelled past its deadline keeps its run.json too (run_record.py).
    run_record.keep(outputs(props, ended), lambda message: log(props, message))
    job = f"Tuning job {ended.name} ({props.get('display_name')})"
    if ended.start_time:
        return JobError(
            f"{job} ran past {tuning_spec.waves(props)} wave(s) of "
            f"timeout_seconds={props['timeout_seconds']} (plus queue_timeout_seconds) and was cancelled "
            f"(now {ended.state}). Details and logs: {ended.console_url}"
        )
    return StudyQueued(
        f"{job} did not start within {queue_limit_name(props)} and was cancelled (now {ended.state}). "
        f"Details: {ended.console_url}",
        ended,
    )


def _watch(runner: TuningRunner, status: TuningStatus, props: dict[str, Any]) -> TuningStatus:
    """Poll to a terminal state, one line per finished trial; cancel past the deadline (StudyQueued when it
    never started)."""
    reporter = TrialReporter(props["metric_id"], lambda message: log(props, message))
    while not status.terminal:
        # The deadline moves when the study starts running: poll a while, then look at it again.
        until = min(_until(status, props), time.time() + DEADLINE_RECHECK_SECONDS)
        status = poll(runner, status, props, until, reporter)
        if not status.terminal and time.time() >= _until(status, props):
            raise _cancel_overrun(runner, status, props)
    return status


def wait(runner: TuningRunner, status: TuningStatus, props: dict[str, Any]) -> TuningStatus:
    """Watch one study to its end; raise unless it succeeded (update: no other shape can change the id)."""
    status = _watch(runner, status, props)
    if status.state != "JOB_STATE_SUCCEEDED":
        raise _failure(props, status)
    return status


def gave_way(status: TuningStatus) -> bool:
    """The study could not get machines: it ended as a CustomJob that gives way does (provider.gave_way),
    or it failed with no trial succeeded and every failed trial lost its machines or hit a quota."""
    failed = [t for t in status.trials if t.state == "INFEASIBLE"]
    trials_lost = (
        status.state == "JOB_STATE_FAILED"
        and bool(failed)
        and not any(t.state == "SUCCEEDED" for t in status.trials)
        and all(names_capacity_loss(t.reason) or names_training_quota(t.reason) for t in failed)
    )
    return job_gave_way(status) or trials_lost


def _ended_reason(status: TuningStatus) -> str:
    """Why a study ended: its error, and the first failed trial's reason (where a stockout shows)."""
    failed = [t for t in status.trials if t.state == "INFEASIBLE" and t.reason]
    trial = f"; trial {failed[0].id}: {failed[0].reason}" if failed else ""
    return f"{status.error or status.state}{trial}"


def _wait_shape(
    runner: TuningRunner, status: TuningStatus, props: dict[str, Any], index: int, shape: Shape
) -> ShapeResult:
    """Watch one shape's study; move on (no error raised) when it could not get machines or never started
    within its queue limit; raise for any other failure."""
    shaped = placement.apply_shape(props, shape)
    try:
        status = _watch(runner, status, shaped)
    except StudyQueued as exc:
        reason = f"did not start within {queue_limit_name(shaped)}; cancelled"
        record = AttemptRecord(index, shape, exc.status.name, exc.status.state, reason)
        return ShapeResult([record], exc.status, move_on=True, error=exc)
    succeeded = status.state == "JOB_STATE_SUCCEEDED"
    reason = "" if succeeded else _ended_reason(status)
    record = AttemptRecord(index, shape, status.name, status.state, reason, running_seconds(status))
    if succeeded:
        return ShapeResult([record], status)
    if gave_way(status):
        return ShapeResult([record], status, move_on=True, error=_failure(shaped, status))
    raise _failure(shaped, status)


def _place(
    runner: TuningRunner, props: dict[str, Any], adopted: TuningStatus | None
) -> tuple[TuningStatus, list[AttemptRecord]]:
    """Run the study on its primary trial shape, else on each fallback in turn (from an adopted study's shape
    on), through placement.try_shapes as a CustomJob does: a shape whose quota cannot hold
    parallel_trial_count trials is skipped without a study; with `wait`, a study that could not get machines
    or is still queued at its limit gives way to the next shape."""
    pending = adopted

    def run(index: int, shape: Shape) -> ShapeResult:
        nonlocal pending
        status, pending = pending, None
        if status is None:
            found = shortfall(_quota_props(placement.apply_shape(props, shape)))
            if found is not None:
                skipped = AttemptRecord(index, shape, "", "SKIPPED", found.reason)
                return ShapeResult([skipped], move_on=True, error=JobError(found.message))
            try:
                status = runner.create(tuning_spec.build_tuning_job(props, shape))
            except JobError as exc:
                if exc.api_error is None or not is_training_quota(exc.api_error):
                    raise
                reason = f"CreateHyperparameterTuningJob refused for quota: {exc.api_error.message}"
                skipped = AttemptRecord(index, shape, "", "SKIPPED", reason)
                return ShapeResult([skipped], move_on=True, error=exc)
            log(props, f"created {status.name} ({status.state}): {status.console_url}")
        else:
            shape = placement.job_shape(status, props)[1]  # adopted: its own shape, whatever the chain says
        if not props["wait"]:
            return ShapeResult([current_record(props, status)], status)
        return _wait_shape(runner, status, props, index, shape)

    start = 0 if adopted is None else placement.resume_index(adopted, props)
    _index, result, records = placement.try_shapes(
        placement.shapes(props),
        start,
        run,
        lambda line: log(props, line),
        lambda tried: JobError(placement.exhausted_message(props, tried, "Tuning job")),
    )
    assert result.status is not None  # a shape that did not give way ran a study
    return result.status, records


def _quota_props(props: dict[str, Any]) -> dict[str, Any]:
    """The trial job's pools as parallel_trial_count copies of themselves: that is what runs at once."""
    parallel = int(props["parallel_trial_count"])
    pools = [{**pool, "replica_count": pool["replica_count"] * parallel} for pool in props["worker_pools"]]
    return {**props, "worker_pools": pools}


class TuningJobProvider(ResourceProvider):
    """Create/read/update/delete a hyperparameter tuning job from snake_case props (tuning_spec.INPUTS)."""

    def configure(self, req: ConfigureRequest) -> None:
        plain_errors()

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        props = tuning_spec.with_defaults(news)
        failures = [CheckFailure(p, reason) for p, reason in tuning_spec.validate(props)]
        if not failures:
            for line in cost_preview.study_preview_lines(props):  # what the study may cost, before it runs
                log(props, line)
        return CheckResult(props, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        olds, news = tuning_spec.with_defaults(olds), tuning_spec.with_defaults(news)
        changed = changed_inputs(olds, news, tuning_spec.INPUTS)
        replaces = [k for k in changed if k not in tuning_spec.IN_PLACE_INPUTS]
        if replaces:
            return DiffResult(changes=True, replaces=replaces, delete_before_replace=True)
        return DiffResult(changes=bool(changed))

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = tuning_spec.with_defaults(props)
        runner = runner_for(props)
        adopted = runner.find_by_key(tuning_spec.job_key(props))
        if adopted is not None:
            log(props, f"adopting {adopted.name} ({adopted.state}), started earlier with the same inputs")
        status, records = _place(runner, props, adopted)
        out = outputs(props, status, records)
        if props["wait"]:
            log(props, summary_line(out))
            run_record.keep(out, lambda message: log(props, message))  # hook: run.json
        return CreateResult(status.name, out)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        props = tuning_spec.with_defaults(props)
        status = runner_for(props).get(id_)
        if status is None:
            return ReadResult("", {})
        return ReadResult(id_, outputs(props, status, stored=props))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        props = tuning_spec.with_defaults(news)
        runner = runner_for(props)
        status = runner.get(id_)
        if status is None:
            raise JobError(
                f"Tuning job {id_} no longer exists; run `pulumi refresh`, then `pulumi up` to run it again."
            )
        if props["wait"]:
            # Waited for under the rules of the shape its trials run on (a FLEX_START fallback: max_wait).
            status = wait(runner, status, placement.apply_shape(props, placement.job_shape(status, props)[1]))
            out = outputs(props, status, stored=olds)
            run_record.keep(out, lambda message: log(props, message))  # hook: run.json
            return UpdateResult(out)
        return UpdateResult(outputs(props, status, stored=olds))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        props = tuning_spec.with_defaults(props)
        stop_and_delete(runner_for(props), id_, props)
