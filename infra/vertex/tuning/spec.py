"""Pure functions over a tuning job's props: defaults, validation, key and the Vertex HyperparameterTuningJob;
the trial job is a CustomJob (custom_job/spec.py), the study's names are aiplatform_v1 StudySpec's."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from google.cloud import aiplatform_v1

from infra.dynamic.preview_inputs import is_unknown, unknown_list
from infra.vertex.capacity import placement
from infra.vertex.custom_job import spec
from infra.vertex.lifecycle import checks
from infra.vertex.lifecycle.props import SHARED_OUTPUTS
from infra.vertex.lifecycle.request import Common

StudySpec = aiplatform_v1.StudySpec
ParameterSpec = StudySpec.ParameterSpec

# Trial-job inputs are the CustomJob's, less what only a single job has: a trial is never resubmitted by the
# provider (Vertex counts a failed trial against max_failed_trial_count instead, so max_restarts is not one of
# the study's inputs), and the study does not stop at a dollar cap, so check refuses max_cost_usd rather than
# let a user believe it holds. `fallbacks` is shared: the provider
# submits the whole study again on the next shape when its trials cannot get machines.
# A study's trials are not linked to Vertex AI Experiments (experiments.py): the study's run.json lists them.
SINGLE_JOB_INPUTS = ("max_restarts", "max_cost_usd", "experiment", "experiment_run")
TRIAL_INPUTS = tuple(k for k in spec.INPUTS if k not in SINGLE_JOB_INPUTS)
STUDY_INPUTS = (
    "metric_id",
    "goal",
    "algorithm",
    "parameters",
    "max_trial_count",
    "parallel_trial_count",
    "max_failed_trial_count",
)
INPUTS = TRIAL_INPUTS + STUDY_INPUTS
IN_PLACE_INPUTS = spec.IN_PLACE_INPUTS
OUTPUTS = (
    *SHARED_OUTPUTS,
    "trials",
    "best_trial",
    "best_parameters",
    "best_metric",
    "duration_seconds",
    "estimated_cost_usd",
    "estimated_cost_bound",
)
DEFAULTS: dict[str, Any] = {"goal": "MAXIMIZE", "algorithm": "default", "max_failed_trial_count": 0}
GOALS = ("MAXIMIZE", "MINIMIZE")
# proto-plus enum members (mypy types them as int: it does not see their metaclass as EnumMeta).
ALGORITHMS: dict[str, int] = {
    "default": StudySpec.Algorithm.ALGORITHM_UNSPECIFIED,  # Vertex's own (Bayesian optimization)
    "grid": StudySpec.Algorithm.GRID_SEARCH,
    "random": StudySpec.Algorithm.RANDOM_SEARCH,
}
PARAMETER_TYPES = ("DOUBLE", "INTEGER", "DISCRETE", "CATEGORICAL")
SCALE_TYPES = tuple(name for name in ParameterSpec.ScaleType.__members__ if name != "SCALE_TYPE_UNSPECIFIED")
# StudySpec: parameter and metric ids "must not contain whitespaces"; Vertex passes each parameter to the
# trial as `--<parameter_id>=<value>`, so the id is a command-line flag name.
_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,127}")
# DiscreteValueSpec: "This list should not contain more than 1,000 values".
MAX_DISCRETE_VALUES = 1000


def with_defaults(props: Mapping[str, Any]) -> dict[str, Any]:
    """The CustomJob defaults for the trial job, then the study's."""
    return {**DEFAULTS, **spec.with_defaults(props)}


def job_key(props: Mapping[str, Any]) -> str:
    """Deterministic label value naming this study's inputs: the same inputs find the same study."""
    return checks.job_key(props, INPUTS, IN_PLACE_INPUTS)


def validate(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem with the (defaulted) props as (property, reason); unknown preview values are skipped."""
    failures = spec.validate({k: v for k, v in props.items() if k not in STUDY_INPUTS})
    if props.get("max_cost_usd") not in (None, []):
        failures.append(
            ("max_cost_usd", "max_cost_usd applies to a CustomJob, not to a tuning job's trials; remove it")
        )
    return failures + _study_failures(props)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _study_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    failures: list[tuple[str, str]] = []
    metric = props.get("metric_id")
    if not is_unknown(metric) and (not isinstance(metric, str) or not _ID.fullmatch(metric)):
        failures.append(("metric_id", f"metric_id must be the reported metric's name, not {metric!r}"))
    for key, allowed in (("goal", GOALS), ("algorithm", tuple(ALGORITHMS))):
        if key in props and not is_unknown(props[key]) and props[key] not in allowed:
            failures.append((key, f"{key} must be one of {', '.join(allowed)}, not {props[key]!r}"))
    counts: dict[str, int] = {}
    for key, minimum in (("max_trial_count", 1), ("parallel_trial_count", 1), ("max_failed_trial_count", 0)):
        if key in props and is_unknown(props[key]):
            continue
        if bad := checks.whole_number_value_failures(key, props.get(key), minimum):
            failures += bad
        else:
            counts[key] = props[key]
    if counts.get("parallel_trial_count", 0) > counts.get("max_trial_count", 10**9):
        failures.append(
            (
                "parallel_trial_count",
                f"parallel_trial_count ({counts['parallel_trial_count']}) exceeds max_trial_count "
                f"({counts['max_trial_count']})",
            )
        )
    if unknown_list(props, "parameters"):
        return failures
    parameters = props.get("parameters")
    if not isinstance(parameters, list) or not parameters:
        failures.append(("parameters", "parameters needs at least one parameter to tune"))
        return failures
    seen: set[str] = set()
    for index, parameter in enumerate(parameters):
        if is_unknown(parameter):
            continue
        failures.extend(_parameter_failures(index, parameter, seen))
    if props.get("algorithm") == "grid":
        ranged = [
            p.get("parameter_id") for p in parameters if isinstance(p, Mapping) and p.get("type") == "DOUBLE"
        ]
        if ranged:
            failures.append(
                (
                    "algorithm",
                    "grid search needs INTEGER, DISCRETE or CATEGORICAL parameters; "
                    f"{', '.join(map(str, ranged))} is a DOUBLE range: give it values, "
                    "or use algorithm random or default",
                )
            )
    return failures


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parameter_failures(index: int, parameter: Any, seen: set[str]) -> list[tuple[str, str]]:
    where = f"parameters[{index}]"
    if not isinstance(parameter, Mapping):
        return [(where, f"{where} must be a map")]
    pid, kind, scale = parameter.get("parameter_id"), parameter.get("type"), parameter.get("scale")
    if not isinstance(pid, str) or not _ID.fullmatch(pid):
        return [(f"{where}.parameter_id", f"{where}.parameter_id must be a flag name, not {pid!r}")]
    if pid in seen:
        return [(f"{where}.parameter_id", f"parameter {pid!r} is listed twice")]
    seen.add(pid)
    if kind not in PARAMETER_TYPES:
        return [(f"{where}.type", f"{pid}: type must be one of {', '.join(PARAMETER_TYPES)}, not {kind!r}")]
    if scale is not None and (kind == "CATEGORICAL" or scale not in SCALE_TYPES):
        allowed = "no scale" if kind == "CATEGORICAL" else f"one of {', '.join(SCALE_TYPES)}"
        return [(f"{where}.scale", f"{pid}: scale must be {allowed}, not {scale!r}")]
    if kind in ("DOUBLE", "INTEGER"):
        low, high = parameter.get("min"), parameter.get("max")
        fits = _count if kind == "INTEGER" else _number
        if not fits(low) or not fits(high):
            return [(where, f"{pid}: a {kind} parameter needs numeric min and max, got {low!r} and {high!r}")]
        assert isinstance(low, int | float) and isinstance(high, int | float)  # fits() said so
        if low > high:
            return [(where, f"{pid}: min {low} is above max {high}")]
        if scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE") and low <= 0:
            return [(where, f"{pid}: a log scale needs a strictly positive range, min is {low}")]
        return []
    values = parameter.get("values")
    if not isinstance(values, list) or not values:
        return [(where, f"{pid}: a {kind} parameter needs a non-empty list of values")]
    if kind == "CATEGORICAL":
        if not all(isinstance(v, str) for v in values):
            return [(where, f"{pid}: CATEGORICAL values must be strings, got {values!r}")]
    elif not all(_number(v) for v in values):
        return [(where, f"{pid}: DISCRETE values must be numbers, got {values!r}")]
    elif len(values) > MAX_DISCRETE_VALUES:
        return [(where, f"{pid}: at most {MAX_DISCRETE_VALUES} DISCRETE values")]
    if len(set(values)) != len(values):
        return [(where, f"{pid}: values are listed twice in {values!r}")]
    return []


def parameter_spec(parameter: Mapping[str, Any]) -> aiplatform_v1.StudySpec.ParameterSpec:
    """One parameter as Vertex's ParameterSpec (DISCRETE values sorted: Vertex wants increasing order)."""
    kind = parameter["type"]
    out = ParameterSpec(parameter_id=parameter["parameter_id"])
    if kind == "DOUBLE":
        out.double_value_spec = ParameterSpec.DoubleValueSpec(
            min_value=float(parameter["min"]), max_value=float(parameter["max"])
        )
    elif kind == "INTEGER":
        out.integer_value_spec = ParameterSpec.IntegerValueSpec(
            min_value=int(parameter["min"]), max_value=int(parameter["max"])
        )
    elif kind == "DISCRETE":
        out.discrete_value_spec = ParameterSpec.DiscreteValueSpec(
            values=sorted(float(v) for v in parameter["values"])
        )
    else:
        out.categorical_value_spec = ParameterSpec.CategoricalValueSpec(values=list(parameter["values"]))
    if kind != "CATEGORICAL":
        scale = parameter.get("scale") or "UNIT_LINEAR_SCALE"
        out.scale_type = ParameterSpec.ScaleType[scale]  # type: ignore[misc]  # proto-plus enum
    return out


def build_job(study: Study, key: str) -> aiplatform_v1.HyperparameterTuningJob:
    """The study of a typed request on its shape (the lifecycle's Placed.body), labelled with its key; its
    trial job spec is the CustomJob spec of its trial (custom_job/spec.py custom_job_spec)."""
    study_spec = StudySpec(
        metrics=[
            StudySpec.MetricSpec(
                metric_id=study.metric_id,
                goal=StudySpec.MetricSpec.GoalType[study.goal],  # type: ignore[misc]  # proto-plus enum
            )
        ],
        parameters=[parameter_spec(p) for p in study.parameters],
        algorithm=ALGORITHMS[study.algorithm],
    )
    return aiplatform_v1.HyperparameterTuningJob(
        display_name=study.common.display_name,
        study_spec=study_spec,
        max_trial_count=study.max_trial_count,
        parallel_trial_count=study.parallel_trial_count,
        max_failed_trial_count=study.max_failed_trial_count,
        trial_job_spec=spec.custom_job_spec(study.trial),
        labels={**study.common.labels, checks.KEY_LABEL: key},
    )


@dataclass(frozen=True)
class Study:
    """A study's whole request (JobRequest.body): the trial's job (a CustomJob's request) and what the study
    optimizes, how, and how many trials it runs."""

    trial: spec.Training
    metric_id: str
    goal: str  # MAXIMIZE or MINIMIZE
    algorithm: str
    parameters: tuple[Mapping[str, Any], ...]
    max_trial_count: int
    parallel_trial_count: int
    max_failed_trial_count: int

    @property
    def waves(self) -> int:
        """How many rounds of parallel trials the study takes at most."""
        return -(-self.max_trial_count // self.parallel_trial_count)

    @property
    def common(self) -> Common:
        return self.trial.common

    @property
    def pools(self) -> tuple[placement.Pool, ...]:
        """One trial's machines."""
        return self.trial.pools

    def on(self, shape: placement.Shape) -> Study:
        """The study on `shape`: its trials' job on it."""
        return replace(self, trial=self.trial.on(shape))


def body(props: Mapping[str, Any]) -> Study:
    """The kind's whole request from the (defaulted) props, parsed once by JobRequest.parse (outputs stored
    by an earlier version may lack a key: a delete still parses them)."""
    return Study(
        trial=spec.body({k: v for k, v in props.items() if k not in STUDY_INPUTS}),
        metric_id=str(props.get("metric_id") or ""),
        goal=str(props.get("goal") or ""),
        algorithm=str(props.get("algorithm") or "default"),
        parameters=tuple(props.get("parameters") or ()),
        max_trial_count=int(props.get("max_trial_count") or 1),
        parallel_trial_count=int(props.get("parallel_trial_count") or 1),
        max_failed_trial_count=int(props.get("max_failed_trial_count") or 0),
    )
