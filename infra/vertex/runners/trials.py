"""A study's trials as every tuning runner reports them, the best of them, and one line per finished trial."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from google.cloud import aiplatform_v1

from infra.vertex.lifecycle.status import JobStatus, iso, seconds_between

# Trial.State names: a trial in one of these has ended (INFEASIBLE: failed, or finished without a metric).
FINISHED_STATES = frozenset({"SUCCEEDED", "INFEASIBLE"})
Value = float | int | str


@dataclass(frozen=True)
class Trial:
    id: str
    state: str  # aiplatform_v1.Trial.State name
    parameters: dict[str, Value]
    metric: float | None = None  # the final measurement of the study's metric
    start_time: str = ""
    end_time: str = ""
    reason: str = ""  # why it is INFEASIBLE

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    def running_seconds(self) -> float:
        return seconds_between(self.start_time, self.end_time)

    def to_output(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}


@dataclass(frozen=True)
class TuningStatus(JobStatus):
    """A tuning job's state (as a CustomJob's) plus its trials so far."""

    trials: tuple[Trial, ...] = field(default_factory=tuple)


def from_proto(trial: aiplatform_v1.Trial, metric_id: str, integers: frozenset[str]) -> Trial:
    """A Vertex Trial: number_value for INTEGER/DOUBLE/DISCRETE (`integers` are whole numbers by definition,
    reported as doubles), string_value for CATEGORICAL."""
    parameters: dict[str, Value] = {}
    for parameter in trial.parameters:
        value = parameter.value
        if not isinstance(value, str):
            value = int(value) if parameter.parameter_id in integers else float(value)
        parameters[parameter.parameter_id] = value
    metrics = [m.value for m in trial.final_measurement.metrics if m.metric_id == metric_id]
    return Trial(
        id=trial.id,
        state=trial.state.name,
        parameters=parameters,
        metric=metrics[-1] if metrics else None,
        start_time=iso(trial.start_time),
        end_time=iso(trial.end_time),
        reason=trial.infeasible_reason,
    )


def best(trials: Iterable[Trial], goal: str) -> Trial | None:
    """The succeeded trial with the best metric (the first one on a tie), or None."""
    scored = [t for t in trials if t.state == "SUCCEEDED" and t.metric is not None]
    if not scored:
        return None
    pick = max if goal == "MAXIMIZE" else min
    return pick(scored, key=lambda t: t.metric)  # type: ignore[arg-type, return-value]


def parameters_text(parameters: dict[str, Value]) -> str:
    """E.g. `batch-size=16 learning-rate=0.001` (whole doubles without their .0)."""
    return " ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(parameters.items())
    )


def trial_line(trial: Trial, metric_id: str) -> str:
    """E.g. `trial 3 SUCCEEDED: learning-rate=0.01 batch-size=16 -> val_accuracy 0.8125 (41s)`."""
    parameters = parameters_text(trial.parameters)
    result = f"{metric_id} {trial.metric:.4f}" if trial.metric is not None else f"no {metric_id}"
    reason = f"; {trial.reason}" if trial.reason else ""
    return (
        f"trial {trial.id} {trial.state}: {parameters} -> {result} ({trial.running_seconds():.0f}s){reason}"
    )


def newly_finished(before: Sequence[Trial], now: Sequence[Trial]) -> list[Trial]:
    """Trials finished in `now` that were not finished in `before`, in id order."""
    done = {t.id for t in before if t.finished}
    return [t for t in now if t.finished and t.id not in done]
