"""The HyperparameterTuningJob as a kind of the shared lifecycle: a study whose trials are CustomJobs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from infra.dynamic.polling import duration_text
from infra.vertex.capacity.placement import Pool
from infra.vertex.capacity.quotas import trials_at_once
from infra.vertex.cost import preview as cost_preview
from infra.vertex.cost import pricing
from infra.vertex.lifecycle import error_classes, waiting
from infra.vertex.lifecycle.kind import Kind, Ticker
from infra.vertex.lifecycle.outcome import Outcome, Ran
from infra.vertex.lifecycle.request import Placed
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local.tuning_runner import LocalTuningRunner
from infra.vertex.runners.trials import Trial, TuningStatus, best, newly_finished, parameters_text, trial_line
from infra.vertex.runners.vertex_tuning import VertexTuningRunner
from infra.vertex.tuning import spec as tuning_spec


@dataclass
class TrialReporter:
    """Called after every poll: one line per trial that finished since the last poll."""

    metric_id: str
    say: Callable[[str], None]
    seen: tuple[Trial, ...] = field(default_factory=tuple)

    def tick(self, status: JobStatus) -> None:
        trials = _trials(status)
        for trial in newly_finished(self.seen, trials):
            self.say(trial_line(trial, self.metric_id))
        self.seen = trials


@dataclass(frozen=True, kw_only=True)
class StudyOutputs(Ran):
    """A study's own outputs: its trials (as outputs) and the best of them."""

    trials: list[dict[str, Any]] = field(default_factory=list)
    best_trial: str = ""
    best_parameters: dict[str, Any] = field(default_factory=dict)
    best_metric: float | None = None


def _trials(status: JobStatus) -> tuple[Trial, ...]:
    return status.trials if isinstance(status, TuningStatus) else ()


def _failed(status: JobStatus) -> list[Trial]:
    return [t for t in _trials(status) if t.state == "INFEASIBLE"]


class TuningJobKind(Kind[tuning_spec.Study, StudyOutputs]):
    spec = tuning_spec
    outputs_type = StudyOutputs
    noun = "Tuning job"
    api_kind = "HyperparameterTuningJob"
    record_kind = "tuning_job"
    record_outputs = ("metric_id", "goal", "trials", "best_trial", "best_parameters", "best_metric")
    run_folder = "tuning"
    output_key = "base_output_dir"
    local_runner = LocalTuningRunner
    vertex_runner = VertexTuningRunner

    def ticker(
        self, placed: Placed[tuning_spec.Study], status: JobStatus, say: Callable[[str], None]
    ) -> Ticker:
        return TrialReporter(placed.request.body.metric_id, say)

    def run_deadline(self, status: JobStatus, placed: Placed[tuning_spec.Study]) -> float | None:
        """Every wave of trials may wait for machines (the trial shape's queue limit) and then run
        timeout_seconds (the trial job's scheduling.timeout), plus grace."""
        timeout = placed.request.common.timeout_seconds
        per_wave = waiting.queue_deadline_seconds(placed) + timeout + waiting.DEADLINE_GRACE_SECONDS
        return waiting.timestamp(status.create_time) + placed.request.body.waves * per_wave

    def overrun_limit(self, placed: Placed[tuning_spec.Study]) -> str:
        timeout, grace = placed.request.common.timeout_seconds, waiting.DEADLINE_GRACE_SECONDS
        return (
            f"{placed.request.body.waves} wave(s) of {waiting.queue_limit_name(placed)} and "
            f"timeout_seconds={timeout}, plus {grace:.0f}s grace each"
        )

    def ended_reason(self, status: JobStatus) -> str:
        """The study's error, and the first failed trial's reason (where a stockout shows)."""
        failed = [t for t in _failed(status) if t.reason]
        trial = f"; trial {failed[0].id}: {failed[0].reason}" if failed else ""
        return f"{status.error or status.state}{trial}"

    def failure_details(self, status: JobStatus) -> str:
        failed = _failed(status)
        if not failed:
            return ""
        return f". Failed trials: {'; '.join(f'trial {t.id}: {t.reason}' for t in failed[:3])}."

    def gave_way_as_a_whole(self, status: JobStatus) -> bool:
        """Failed with no trial succeeded, and every failed trial lost its machines or hit a quota."""
        failed = _failed(status)
        return (
            status.state == "JOB_STATE_FAILED"
            and bool(failed)
            and not any(t.state == "SUCCEEDED" for t in _trials(status))
            and all(error_classes.wants_machines(t.reason) for t in failed)
        )

    def quota_pools(self, placed: Placed[tuning_spec.Study]) -> tuple[Pool, ...]:
        return trials_at_once(placed.pools, placed.request.body.parallel_trial_count)

    def outputs(
        self, placed: Placed[tuning_spec.Study], status: JobStatus, say: Callable[[str], None]
    ) -> StudyOutputs:
        """Trials, the best one, and duration and cost: the trials of this study, at its shape."""
        top = best(_trials(status), placed.request.body.goal)
        # Machine time of all trials together (what the study bills), not the study's wall-clock time.
        seconds = sum(t.running_seconds() for t in _trials(status))
        # At the trials' shape in its own region (None off Vertex); Spot/FLEX_START without a price of their
        # own at the on-demand bound (pricing.shape_rate), said as a bound.
        rate = placed.rate
        return StudyOutputs(
            trials=[t.to_output() for t in _trials(status)],
            best_trial=top.id if top else "",
            best_parameters=dict(top.parameters) if top else {},
            best_metric=top.metric if top else None,
            duration_seconds=round(seconds, 1),
            estimated_cost_usd=round(rate.usd * seconds / 3600.0, 4) if rate else None,
            estimated_cost_bound=bool(rate and rate.bound),
        )

    def summary(self, outcome: Outcome[StudyOutputs], placed: Placed[tuning_spec.Study]) -> str:
        """E.g. `JOB_STATE_SUCCEEDED: 4 trials (1 failed), 6m 2s of trial time; best trial 3 ...; USD 0.2`."""
        own = outcome.own
        failed = sum(t["state"] == "INFEASIBLE" for t in own.trials)
        took = duration_text(own.duration_seconds)
        parts = [f"{outcome.state}: {len(own.trials)} trials ({failed} failed), {took} of trial time"]
        if own.best_trial:
            shown = parameters_text(own.best_parameters)
            parts.append(
                f"best trial {own.best_trial}: {shown} -> {placed.request.body.metric_id} "
                f"{own.best_metric:.4f}"
            )
        cost = own.estimated_cost_usd
        if cost is not None:
            strategy = outcome.placement["scheduling_strategy"]
            parts.append(pricing.cost_words(cost, own.estimated_cost_bound, strategy))
        return "; ".join(parts)

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        return cost_preview.study_preview_lines(props)

    def worst_case_usd(self, props: dict[str, Any]) -> float | None:
        return cost_preview.study_worst_case_usd(props)


TUNING_JOB = TuningJobKind()
