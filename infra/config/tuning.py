"""The `tuning` study (a hyperparameter tuning job before training) and `trainWithBest`.

`tuning.parameters` is keyed by this stack's hyperparameter keys; each is `{values: [...]}` or
`{min, max[, scale]}` (INTEGER for whole-number keys, DOUBLE for learningRate). Values of learningRate are
DISCRETE; values of a whole-number key or of backbone are CATEGORICAL strings, because Vertex hands a trial
its DISCRETE values as doubles (`--batch-size=16.0`, kuds/mesozoic-labs PR #127, 2026-03, read 2026-11-22),
which an `int` flag refuses, and CATEGORICAL values as written. A key's flag is the one trainerArgs pass its
placeholder with (`--batch-size {batch_size}`): the study sets it per trial (`--<flag>=<value>`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.config.hyperparameters import BACKBONES
from infra.config.reader import ConfigError, Reader, set_fix
from infra.config.trainer import TrainerConfig, argument_uses

KEYS = ("tuning", "trainWithBest")
# Each trial checkpoints in its own AIP_CHECKPOINT_DIR: the stack's shared one is left out of its arguments.
CHECKPOINT_PLACEHOLDER = "checkpoint_dir"
# What the built-in trainer reports per epoch (Keras logs) and, at the end, for the exported model.
TRAINER_METRICS = ("val_accuracy", "val_loss", "accuracy", "loss")
GOALS = ("MAXIMIZE", "MINIMIZE")
ALGORITHMS = ("default", "grid", "random")
SCALES = {"linear": "UNIT_LINEAR_SCALE", "log": "UNIT_LOG_SCALE", "reverseLog": "UNIT_REVERSE_LOG_SCALE"}
ENTRIES = ("metric", "goal", "algorithm", "maxTrials", "parallelTrials", "maxFailedTrials", "parameters")
EXAMPLE = (
    "{metric: val_accuracy, goal: MAXIMIZE, algorithm: grid, maxTrials: 4, parallelTrials: 2, "
    "parameters: {learningRate: {values: [0.01, 0.001]}}}"
)


@dataclass(frozen=True)
class Tunable:
    """A hyperparameter key the study may vary: its field (and trainerArgs placeholder) and value kind."""

    field: str
    kind: type
    minimum: float  # the smallest allowed value (learningRate: exclusive)


TUNABLE: dict[str, Tunable] = {
    "learningRate": Tunable("learning_rate", float, 0.0),
    "batchSize": Tunable("batch_size", int, 1),
    "epochs": Tunable("epochs", int, 1),
    "fineTuneEpochs": Tunable("fine_tune_epochs", int, 0),
    "backbone": Tunable("backbone", str, 0),
}


@dataclass(frozen=True)
class TunedParameter:
    key: str  # the hyperparameter config key
    parameter_id: str  # the trainer flag trainerArgs pass the key's placeholder with, without dashes
    type: str  # DOUBLE, INTEGER, DISCRETE or CATEGORICAL (Vertex's parameter types)
    values: tuple[float | int | str, ...] = ()
    min: float | int | None = None
    max: float | int | None = None
    scale: str | None = None  # Vertex's scale type name


@dataclass(frozen=True)
class TuningConfig:
    metric: str
    goal: str
    algorithm: str
    max_trials: int
    parallel_trials: int
    max_failed_trials: int
    parameters: tuple[TunedParameter, ...]
    train_with_best: bool


_KIND_NAMES = {int: "whole number", float: "number", str: "string"}


def _fail(entry: str, problem: str) -> ConfigError:
    return ConfigError("tuning", f"{entry}: {problem}", set_fix("tuning", f"'{EXAMPLE}'") + " (YAML)")


def _mapping(read: Reader) -> Mapping[str, Any] | None:
    value = read.raw("tuning")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise _fail("tuning", f"expected a map, got {value!r}") from None
    if value is not None and not isinstance(value, Mapping):
        raise _fail("tuning", f"expected a map, got {value!r}")
    return value


def _count(study: Mapping[str, Any], entry: str, default: int | None, minimum: int) -> int:
    value = study.get(entry, default)
    if value is None:
        raise _fail(entry, "is required (how many trials the study runs)")
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(entry, f"must be a whole number >= {minimum}, got {value!r}")
    return value


def _is(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) if kind is float else isinstance(value, kind)


def _check_value(entry: str, key: str, value: Any) -> None:
    tunable = TUNABLE[key]
    if not _is(value, tunable.kind):
        raise _fail(entry, f"{value!r} is not a {_KIND_NAMES[tunable.kind]} (the type of {key})")
    if key == "backbone" and value not in BACKBONES:
        raise _fail(entry, f"{value!r} is not one of {', '.join(BACKBONES)}")
    if key == "learningRate" and not 0 < value <= 1:
        raise _fail(entry, f"{value!r} is outside (0, 1]")
    if tunable.kind is int and value < tunable.minimum:
        raise _fail(entry, f"{value!r} is below {tunable.minimum:g}, the smallest {key}")


def _flag(entry: str, key: str, templates: tuple[str, ...]) -> str:
    """The flag trainerArgs pass the key's placeholder with: the study sets that flag per trial."""
    name = TUNABLE[key].field
    uses = argument_uses(templates, name)
    if len(uses) != 1 or uses[0].flag is None:
        raise ConfigError(
            "tuning",
            f"{entry}: trainerArgs must pass {{{name}}} once, as `--flag {{{name}}}` or `--flag={{{name}}}` "
            f"(found {len(uses)} use(s)): its flag is what each trial sets",
            f"add e.g. --{name.replace('_', '-')}, '{{{name}}}' to vertex-training:trainerArgs",
        )
    return uses[0].flag


def _parameter(key: str, spec: Any, templates: tuple[str, ...]) -> TunedParameter:
    entry = f"parameters.{key}"
    if key not in TUNABLE:
        raise _fail(entry, f"{key!r} cannot be tuned; tunable keys: {', '.join(TUNABLE)}")
    flag = _flag(entry, key, templates)
    if not isinstance(spec, Mapping) or not ({"values"} <= spec.keys() or {"min", "max"} <= spec.keys()):
        raise _fail(entry, f"expected {{values: [...]}} or {{min, max[, scale]}}, got {spec!r}")
    tunable = TUNABLE[key]
    if "values" in spec:
        values = spec["values"]
        if not isinstance(values, list) or not values:
            raise _fail(entry, f"values must be a non-empty list, got {values!r}")
        for value in values:
            _check_value(entry, key, value)
        if len(set(values)) != len(values):
            raise _fail(entry, f"values {values!r} lists a value twice")
        if tunable.kind is float:
            return TunedParameter(key, flag, "DISCRETE", values=tuple(values))
        return TunedParameter(key, flag, "CATEGORICAL", values=tuple(str(v) for v in values))
    if tunable.kind is str:
        raise _fail(entry, f"{key} takes values, not a range")
    low, high, scale = spec["min"], spec["max"], spec.get("scale", "linear")
    _check_value(entry, key, low)
    _check_value(entry, key, high)
    if low >= high:
        raise _fail(entry, f"min {low} must be below max {high} (an empty or reversed range)")
    if scale not in SCALES:
        raise _fail(entry, f"scale {scale!r} is not one of {', '.join(SCALES)}")
    if scale != "linear" and low <= 0:
        raise _fail(entry, f"a {scale} scale needs min above 0, got {low}")
    kind = "INTEGER" if tunable.kind is int else "DOUBLE"
    return TunedParameter(key, flag, kind, min=low, max=high, scale=SCALES[scale])


def _check_checkpoint_dir(templates: tuple[str, ...]) -> None:
    """Trials leave the shared {checkpoint_dir} out (best_parameters.trial_templates): not positional."""
    if any(not use.flagged for use in argument_uses(templates, CHECKPOINT_PLACEHOLDER)):
        raise ConfigError(
            "tuning",
            "trainerArgs pass {checkpoint_dir} as a positional argument, which the trials cannot leave out "
            "(each trial checkpoints in its own AIP_CHECKPOINT_DIR)",
            "pass it behind a flag (--checkpoint-dir, '{checkpoint_dir}') defaulting to AIP_CHECKPOINT_DIR",
        )


def read_tuning(read: Reader, trainer: TrainerConfig) -> TuningConfig | None:
    """The study, or None without `tuning`; errors name `tuning` and the entry. `trainer`: whose flags the
    parameters set and, for the built-in trainer, which metrics it reports."""
    study = _mapping(read)
    train_with_best = read.bool("trainWithBest", False)
    if study is None:
        if train_with_best:
            raise ConfigError(
                "trainWithBest",
                "needs a study to take the best parameters from",
                "set vertex-training:tuning",
            )
        return None
    unknown = [k for k in study if k not in ENTRIES]
    if unknown:
        raise _fail(unknown[0], f"is not a tuning entry (entries: {', '.join(ENTRIES)})")
    metric = study.get("metric", TRAINER_METRICS[0] if trainer.builtin else None)
    if trainer.builtin and metric not in TRAINER_METRICS:
        raise _fail(
            "metric", f"the trainer does not report {metric!r}; it reports {', '.join(TRAINER_METRICS)}"
        )
    if not isinstance(metric, str) or not metric or any(c.isspace() for c in metric):
        raise _fail("metric", f"must name the metric your trainer reports (hypertune), got {metric!r}")
    goal = study.get("goal", "MINIMIZE" if metric.endswith("loss") else "MAXIMIZE")
    if goal not in GOALS:
        raise _fail("goal", f"{goal!r} is not one of {', '.join(GOALS)}")
    algorithm = study.get("algorithm", "default")
    if algorithm not in ALGORITHMS:
        raise _fail("algorithm", f"{algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    max_trials = _count(study, "maxTrials", None, 1)
    parallel = _count(study, "parallelTrials", 1, 1)
    if parallel > max_trials:
        raise _fail("parallelTrials", f"{parallel} parallel trials is more than maxTrials {max_trials}")
    raw = study.get("parameters")
    if not isinstance(raw, Mapping) or not raw:
        raise _fail("parameters", f"expected a map of hyperparameter keys to tune, got {raw!r}")
    parameters = tuple(_parameter(key, spec, trainer.args) for key, spec in raw.items())
    _check_checkpoint_dir(trainer.args)
    ranged = [p.key for p in parameters if p.type == "DOUBLE"]
    if algorithm == "grid" and ranged:
        raise _fail("algorithm", f"grid search needs values for {', '.join(ranged)}, not a min/max range")
    return TuningConfig(
        metric=metric,
        goal=goal,
        algorithm=algorithm,
        max_trials=max_trials,
        parallel_trials=parallel,
        max_failed_trials=_count(study, "maxFailedTrials", 0, 0),
        parameters=parameters,
        train_with_best=train_with_best,
    )
