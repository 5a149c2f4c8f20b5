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

from infra.config import suggest
from infra.config.hyperparameters import BACKBONES
from infra.config.reader import NAMESPACE, ConfigError, Reader, path_number, rm_fix, set_path_fix
from infra.config.trainer import TrainerConfig, argument_uses

KEYS = ("tuning", "trainWithBest")
# Each trial checkpoints in its own AIP_CHECKPOINT_DIR: the stack's shared one is left out of its arguments.
CHECKPOINT_PLACEHOLDER = "checkpoint_dir"
# What the built-in trainer reports per epoch (Keras logs) and, at the end, for the exported model.
TRAINER_METRICS = ("val_accuracy", "val_loss", "accuracy", "loss")
GOALS = ("MAXIMIZE", "MINIMIZE")
ALGORITHMS = ("default", "grid", "random")
# Vertex's own names for them (StudySpec.Algorithm), which a user may bring.
ALGORITHM_ALIASES = {"GRID_SEARCH": "grid", "RANDOM_SEARCH": "random", "ALGORITHM_UNSPECIFIED": "default"}
SCALES = {"linear": "UNIT_LINEAR_SCALE", "log": "UNIT_LOG_SCALE", "reverseLog": "UNIT_REVERSE_LOG_SCALE"}
ENTRIES = ("metric", "goal", "algorithm", "maxTrials", "parallelTrials", "maxFailedTrials", "parameters")


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


# Two values of each tunable key, for the commands the errors suggest.
_EXAMPLES: dict[str, tuple[Any, Any]] = {
    "learningRate": (0.01, 0.001),
    "batchSize": (16, 32),
    "epochs": (2, 4),
    "fineTuneEpochs": (1, 2),
    "backbone": ("densenet121", "resnet50"),
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
# Where the whole study is described, for the errors about its shape.
DOCS = "docs/tuning.md"


def _fail(entry: str, problem: str, fix: str) -> ConfigError:
    return ConfigError("tuning", f"{entry}: {problem}", fix)


def _set(path: str, example: object) -> str:
    """The command that sets one entry of the study."""
    return set_path_fix(f"tuning.{path}", example)


def _rename(entry: str, name: str, right: str | None, known: tuple[str, ...] | list[str]) -> str:
    if right:
        return f"did you mean {right}? rename {name} to {right} under {NAMESPACE}:tuning{entry}"
    return f"use one of {', '.join(known)} (see {DOCS})"


def _mapping(read: Reader) -> Mapping[str, Any] | None:
    value = read.raw("tuning")
    fix = (
        f"{rm_fix('tuning')}, then set each entry, e.g. {_set('metric', 'val_accuracy')}, "
        f"{_set('maxTrials', 4)}, {_set('parameters.learningRate.values[0]', 0.01)} and "
        f"{_set('parameters.learningRate.values[1]', 0.001)}, or write it as "
        f"a YAML map in the stack file or a JSON object (see {DOCS})"
    )
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise _fail("tuning", f"expected a map, got {value!r}", fix) from None
    if value is not None and not isinstance(value, Mapping):
        raise _fail("tuning", f"expected a map, got {value!r}", fix)
    return value


def _count(study: Mapping[str, Any], entry: str, default: int | None, minimum: int, example: int) -> int:
    value = path_number(study.get(entry, default))
    if value is None:
        raise _fail(entry, "is required (how many trials the study runs)", _set(entry, example))
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(entry, f"must be a whole number >= {minimum}, got {value!r}", _set(entry, example))
    return value


def _is(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) if kind is float else isinstance(value, kind)


def _value(entry: str, key: str, value: Any) -> Any:
    """One value of a tuned key, as its type (numbers set with --path arrive as strings); refused if bad."""
    tunable = TUNABLE[key]
    value = value if tunable.kind is str else path_number(value)
    if tunable.kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)  # 2.0 is the whole number 2, as for the stack's own keys (Reader.number)
    if not _is(value, tunable.kind):
        example = {int: 2, float: 0.01, str: BACKBONES[0]}[tunable.kind]
        raise _fail(
            entry,
            f"{value!r} is not a {_KIND_NAMES[tunable.kind]} (the type of {key})",
            f"give {key} {_KIND_NAMES[tunable.kind]}s, e.g. {_set(entry, example)}",
        )
    if key == "backbone" and value not in BACKBONES:
        right = suggest.closest(value, BACKBONES)
        fix = f"did you mean {right}? " if right else ""
        raise _fail(
            entry,
            f"{value!r} is not one of {', '.join(BACKBONES)}",
            f"{fix}{_set(entry, right or BACKBONES[0])}",
        )
    if key == "learningRate" and not 0 < value <= 1:
        raise _fail(
            entry,
            f"{value!r} is outside (0, 1]",
            f"give learning rates above 0 and at most 1, e.g. {_set(entry, 0.01)}",
        )
    if tunable.kind is int and value < tunable.minimum:
        minimum = int(tunable.minimum)
        raise _fail(entry, f"{value!r} is below {minimum}, the smallest {key}", _set(entry, minimum))
    return value


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


def _values(entry: str, key: str, values: Any) -> tuple:
    if not isinstance(values, list) or not values:
        raise _fail(
            entry,
            f"values must be a non-empty list, got {values!r}",
            _set(f"{entry}.values[0]", _EXAMPLES[key][0]),
        )
    checked = [_value(f"{entry}.values[{i}]", key, value) for i, value in enumerate(values)]
    if len(set(checked)) != len(checked):
        twice = next(v for v in checked if checked.count(v) > 1)
        raise _fail(
            entry,
            f"values {values!r} lists {twice!r} twice",
            f"remove one {twice!r} from {NAMESPACE}:tuning.{entry}.values",
        )
    return tuple(checked)


def _widen(entry: str, tunable: Tunable, value: float) -> str:
    """The command that turns the range [value, value] into one with min below max: raise max, or, when
    max cannot go higher (a learning rate is at most 1), lower min."""
    if tunable.kind is int:
        return _set(f"{entry}.max", int(value) + 1)
    if (higher := min(1, value * 10)) > value:
        return _set(f"{entry}.max", higher)
    return _set(f"{entry}.min", value / 10)


def _parameter(key: str, spec: Any, templates: tuple[str, ...]) -> TunedParameter:
    entry = f"parameters.{key}"
    if key not in TUNABLE:
        right = suggest.closest(key, TUNABLE)
        raise _fail(
            entry,
            f"{key!r} cannot be tuned; tunable keys: {', '.join(TUNABLE)}",
            _rename(".parameters", key, right, list(TUNABLE)),
        )
    flag = _flag(entry, key, templates)
    if not isinstance(spec, Mapping) or not ({"values"} <= spec.keys() or {"min", "max"} <= spec.keys()):
        first, second = _EXAMPLES[key]
        raise _fail(
            entry,
            f"expected {{values: [...]}} or {{min, max[, scale]}}, got {spec!r}",
            f"{_set(f'{entry}.values[0]', first)} and {_set(f'{entry}.values[1]', second)}",
        )
    tunable = TUNABLE[key]
    if "values" in spec:
        values = _values(entry, key, spec["values"])
        if tunable.kind is float:
            return TunedParameter(key, flag, "DISCRETE", values=values)
        return TunedParameter(key, flag, "CATEGORICAL", values=tuple(str(v) for v in values))
    if tunable.kind is str:
        raise _fail(
            entry,
            f"{key} takes values, not a range",
            f"list them: {_set(f'{entry}.values[0]', BACKBONES[0])}, ...",
        )
    low = _value(f"{entry}.min", key, spec["min"])
    high = _value(f"{entry}.max", key, spec["max"])
    scale = spec.get("scale", "linear")
    if low >= high:
        fix = (
            f"{_set(f'{entry}.min', high)} and {_set(f'{entry}.max', low)}"
            if low > high
            else _widen(entry, tunable, low)
        )
        raise _fail(entry, f"min {low} must be below max {high} (an empty or reversed range)", fix)
    if scale not in SCALES:
        right = suggest.closest(str(scale), SCALES)
        raise _fail(
            entry,
            f"scale {scale!r} is not one of {', '.join(SCALES)}",
            _set(f"{entry}.scale", right or "linear"),
        )
    if scale != "linear" and low <= 0:
        raise _fail(
            entry,
            f"a {scale} scale needs min above 0, got {low}",
            f"{_set(f'{entry}.min', 1)} or {_set(f'{entry}.scale', 'linear')}",
        )
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


def _metric(study: Mapping[str, Any], trainer: TrainerConfig) -> str:
    metric = study.get("metric", TRAINER_METRICS[0] if trainer.builtin else None)
    if trainer.builtin and metric not in TRAINER_METRICS:
        right = suggest.closest(str(metric), TRAINER_METRICS) or TRAINER_METRICS[0]
        raise _fail(
            "metric",
            f"the trainer does not report {metric!r}; it reports {', '.join(TRAINER_METRICS)}",
            _set("metric", right),
        )
    if not isinstance(metric, str) or not metric or any(c.isspace() for c in metric):
        raise _fail(
            "metric",
            f"must name the metric your trainer reports (hypertune), got {metric!r}",
            _set("metric", "<the name your trainer reports, e.g. val_loss>"),
        )
    return metric


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
                f"describe one ({_set('maxTrials', 4)}, ...; see {DOCS}) or "
                f"`pulumi config rm {NAMESPACE}:trainWithBest`",
            )
        return None
    unknown = [k for k in study if k not in ENTRIES]
    if unknown:
        right = suggest.closest(unknown[0], ENTRIES)
        raise _fail(unknown[0], "is not a tuning entry", _rename("", unknown[0], right, ENTRIES))
    metric = _metric(study, trainer)
    loss = metric.endswith("loss")
    goal = study.get("goal", "MINIMIZE" if loss else "MAXIMIZE")
    if goal not in GOALS:
        raise _fail(
            "goal",
            f"{goal!r} is not one of {', '.join(GOALS)}",
            _set("goal", "MINIMIZE" if loss else "MAXIMIZE"),
        )
    algorithm = study.get("algorithm", "default")
    if algorithm not in ALGORITHMS:
        right = suggest.closest(str(algorithm), ALGORITHMS, ALGORITHM_ALIASES) or "default"
        raise _fail(
            "algorithm", f"{algorithm!r} is not one of {', '.join(ALGORITHMS)}", _set("algorithm", right)
        )
    max_trials = _count(study, "maxTrials", None, 1, 4)
    parallel = _count(study, "parallelTrials", 1, 1, min(2, max_trials))
    if parallel > max_trials:
        raise _fail(
            "parallelTrials",
            f"{parallel} parallel trials is more than maxTrials {max_trials}",
            f"set parallelTrials <= {max_trials}: {_set('parallelTrials', max_trials)} "
            f"(or allow more trials: {_set('maxTrials', parallel)})",
        )
    raw = study.get("parameters")
    if not isinstance(raw, Mapping) or not raw:
        raise _fail(
            "parameters",
            f"expected a map of hyperparameter keys to tune, got {raw!r}",
            f"{_set('parameters.learningRate.values[0]', 0.01)} and "
            f"{_set('parameters.learningRate.values[1]', 0.001)} (tunable keys: {', '.join(TUNABLE)})",
        )
    parameters = tuple(_parameter(key, spec, trainer.args) for key, spec in raw.items())
    _check_checkpoint_dir(trainer.args)
    ranged = [p.key for p in parameters if p.type == "DOUBLE"]
    if algorithm == "grid" and ranged:
        raise _fail(
            "algorithm",
            f"grid search needs values for {', '.join(ranged)}, not a min/max range",
            f"list values instead (e.g. {_set(f'parameters.{ranged[0]}.values[0]', 0.01)}, ...), "
            f"or search the range at random: {_set('algorithm', 'random')}",
        )
    return TuningConfig(
        metric=metric,
        goal=goal,
        algorithm=algorithm,
        max_trials=max_trials,
        parallel_trials=parallel,
        max_failed_trials=_count(study, "maxFailedTrials", 0, 0, 1),
        parameters=parameters,
        train_with_best=train_with_best,
    )
