"""The study's side of the stack, as pure functions: the tuned parameters as the resource's, the trial job's
arguments, and the best trial's parameters laid onto the training job's hyperparameters."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from infra.config.hyperparameters import Hyperparameters
from infra.config.tuning import TUNABLE, TuningConfig
from infra.vertex.tuning_resource import Parameter, StudyArgs

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


def trial_args(train_args: Sequence[str]) -> list[str]:
    """The training arguments less --checkpoint-dir: each trial then checkpoints in its own
    AIP_CHECKPOINT_DIR (<study dir>/<trial id>/checkpoints/) instead of resuming another trial's."""
    out, skip = [], False
    for arg in train_args:
        if skip:
            skip = False
        elif arg == "--checkpoint-dir":
            skip = True
        else:
            out.append(arg)
    return out


def with_best(hyperparameters: Hyperparameters, best: Mapping[str, Any] | None) -> Hyperparameters:
    """The hyperparameters with the best trial's values (keyed by parameter id, i.e. trainer flag) laid on.

    Vertex reports DISCRETE and INTEGER values as doubles: whole-number keys take them back as ints. No best
    (a study without a succeeded trial, which fails before training starts) leaves them as configured.
    """
    by_flag = {t.flag: t for t in TUNABLE.values()}
    tuned = [(by_flag[flag], value) for flag, value in (best or {}).items() if flag in by_flag]
    changes = {t.field: t.kind(value) for t, value in tuned}
    return dataclasses.replace(hyperparameters, **changes)
