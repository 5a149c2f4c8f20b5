"""TuningJobProvider: the Pulumi dynamic provider that runs a hyperparameter tuning study and tears it down.

Pickled by reference into every stack's state: keep this module's path and the class name as they are.
It shares the CustomJob provider's machinery: the trial job's props and checks (spec.py), the key label and
adoption, the quota pre-check, polling with backoff and state lines, deadlines, errors, the emulator switch
and retries (through the runners). It holds no state; runners are made inside each method.
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
from infra.vertex import cost_preview, pricing, spec, tuning_spec
from infra.vertex.errors import JobError, job_failure_hint
from infra.vertex.heartbeat import duration_text
from infra.vertex.provider import (
    CANCEL_WAIT_SECONDS,
    DEADLINE_GRACE_SECONDS,
    _log,
    _poll,
    _timestamp,
    stop_and_delete,
)
from infra.vertex.quotas import check_quota
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


def outputs(props: dict[str, Any], status: TuningStatus) -> dict[str, Any]:
    inputs = {k: props[k] for k in tuning_spec.INPUTS if k in props}
    top = best(status.trials, props["goal"])
    seconds = running_seconds(status)
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
    }
    if props.get("runner") == "vertex":
        strategy = pricing.props_strategy(props)
        cost = pricing.estimate_usd(
            props["region"], props["worker_pools"], strategy, seconds, props.get("project")
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
        kind = pricing.props_strategy(out)
        parts.append(f"estimated cost USD {out['estimated_cost_usd']:.2f} ({kind} list prices)")
    return "; ".join(parts)


def deadline(status: TuningStatus, props: dict[str, Any]) -> float:
    """Wall-clock time after which a live study has overrun: every wave of trials may wait for machines (the
    trial shape's queue limit: max_wait_seconds plus grace for FLEX_START) and then run timeout_seconds (the
    trial job's scheduling.timeout), plus grace."""
    per_wave = spec.queue_deadline_seconds(props) + props["timeout_seconds"] + DEADLINE_GRACE_SECONDS
    return _timestamp(status.create_time) + tuning_spec.waves(props) * per_wave


def _failure(props: dict[str, Any], status: TuningStatus) -> JobError:
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


def wait(runner: TuningRunner, status: TuningStatus, props: dict[str, Any]) -> TuningStatus:
    """Poll to a terminal state, one line per finished trial; cancel past the deadline; raise unless it
    succeeded."""
    say = lambda message: _log(props, message)  # noqa: E731
    reporter = TrialReporter(props["metric_id"], say)
    status = _poll(runner, status, props, deadline(status, props), reporter)
    if not status.terminal:
        say(f"{status.name} overran its deadline ({status.state}); cancelling it")
        runner.cancel(status.name)
        status = _poll(runner, status, props, time.time() + CANCEL_WAIT_SECONDS)
        raise JobError(
            f"Tuning job {status.name} ({props.get('display_name')}) ran past {tuning_spec.waves(props)} "
            f"wave(s) of timeout_seconds={props['timeout_seconds']} (plus queue_timeout_seconds) and was "
            f"cancelled (now {status.state}). Details and logs: {status.console_url}"
        )
    if status.state != "JOB_STATE_SUCCEEDED":
        raise _failure(props, status)
    return status


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
                _log(props, line)
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
        status = runner.find_by_key(tuning_spec.job_key(props))
        if status is not None:
            _log(props, f"adopting {status.name} ({status.state}), started earlier with the same inputs")
        else:
            check_quota(_quota_props(props))
            status = runner.create(tuning_spec.build_tuning_job(props))
            _log(props, f"created {status.name} ({status.state}): {status.console_url}")
        if props["wait"]:
            status = wait(runner, status, props)
            out = outputs(props, status)
            _log(props, summary_line(out))
            return CreateResult(status.name, out)
        return CreateResult(status.name, outputs(props, status))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        props = tuning_spec.with_defaults(props)
        status = runner_for(props).get(id_)
        if status is None:
            return ReadResult("", {})
        return ReadResult(id_, outputs(props, status))

    def update(self, id_: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        props = tuning_spec.with_defaults(news)
        runner = runner_for(props)
        status = runner.get(id_)
        if status is None:
            raise JobError(
                f"Tuning job {id_} no longer exists; run `pulumi refresh`, then `pulumi up` to run it again."
            )
        if props["wait"]:
            status = wait(runner, status, props)
        return UpdateResult(outputs(props, status))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        props = tuning_spec.with_defaults(props)
        stop_and_delete(runner_for(props), id_, props)
