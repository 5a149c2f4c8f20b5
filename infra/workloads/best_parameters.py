"""The study's side of the stack, as pure functions: the tuned parameters as the resource's, the trial job's
arguments, and the best trial's parameters laid onto the training job's hyperparameters."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from infra.config.hyperparameters import Hyperparameters
from infra.config.trainer import argument_uses
from infra.config.tuning import CHECKPOINT_PLACEHOLDER, TUNABLE, TuningConfig
from infra.vertex.tuning.resource import Parameter, StudyArgs

# The environment variable that names the study's metric to the trainer (trainer/hypertune.py).
METRIC_TAG_ENV = "CLOUD_ML_HP_METRIC_TAG"


def study_args(tuning: TuningConfig) -> StudyArgs:
    """The resource's study for this config: each parameter's id is the trainer flag it sets."""
    parameters = [
        Parameter(
            parameter_id=p.parameter_id,
            type=p.type,
            values=list(p.values) or None,
            min=p.min,
            max=p.max,
            scale=p.scale,
        )
        for p in tuning.parameters
    ]
    return StudyArgs(
        metric_id=tuning.metric,
        parameters=parameters,
        max_trial_count=tuning.max_trials,
        parallel_trial_count=tuning.parallel_trials,
        goal=tuning.goal,
        algorithm=tuning.algorithm,
        max_failed_trial_count=tuning.max_failed_trials,
    )


def trial_templates(templates: Sequence[str], tuning: TuningConfig) -> tuple[str, ...]:
    """trainerArgs for a trial: less the shared {checkpoint_dir} (each trial checkpoints in its own
    AIP_CHECKPOINT_DIR, <study dir>/<trial id>/checkpoints/) and less the tuned keys' arguments (the trial
    gets them as `--<flag>=<value>`); the config checked that each is passed behind a flag."""
    names = [CHECKPOINT_PLACEHOLDER, *(TUNABLE[p.key].field for p in tuning.parameters)]
    dropped = {i for name in names for use in argument_uses(tuple(templates), name) for i in use.indices}
    return tuple(t for i, t in enumerate(templates) if i not in dropped)


def config_values(tuning: TuningConfig, best: Mapping[str, Any] | None) -> dict[str, Any]:
    """The best trial's parameters (keyed by parameter id, i.e. trainer flag) as the config wrote them:
    by hyperparameter key, whole-number keys as ints (Vertex reports DISCRETE and INTEGER values as
    doubles, CATEGORICAL ones as strings). No best (no succeeded trial) gives {}."""
    keys = {p.parameter_id: p.key for p in tuning.parameters}
    return {
        keys[flag]: TUNABLE[keys[flag]].kind(value) for flag, value in (best or {}).items() if flag in keys
    }


def with_best(
    hyperparameters: Hyperparameters, tuning: TuningConfig, best: Mapping[str, Any] | None
) -> Hyperparameters:
    """The hyperparameters with the best trial's values laid on (none: as configured)."""
    changes = {TUNABLE[key].field: value for key, value in config_values(tuning, best).items()}
    return dataclasses.replace(hyperparameters, **changes)
