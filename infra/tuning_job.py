"""The stack's hyperparameter tuning job: the training job's pools as the trial job, and the study."""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi

from infra.best_parameters import METRIC_TAG_ENV, study_args, trial_args
from infra.config.tuning import TuningConfig
from infra.vertex.resource import CustomJobArgs, WorkerPool
from infra.vertex.tuning_resource import HyperparameterTuningJob


def study_dir(root: str, study_hash: str) -> str:
    """One directory per study (its trials' outputs in <dir>/<trial id>/), so a changed study never resumes
    an earlier study's trial checkpoints."""
    return f"{root}/tuning/{study_hash}"


def tuning_job(
    tuning: TuningConfig,
    display_name: str,
    pools: list[WorkerPool],
    base_output_dir: str,
    common: dict[str, Any],
    opts: pulumi.ResourceOptions,
) -> HyperparameterTuningJob:
    """The study over the training job's pools: no shared checkpoint dir, the metric named to the trainer."""
    trial_pools = [
        dataclasses.replace(
            pool,
            args=trial_args([str(a) for a in pool.args]),
            env={**pool.env, METRIC_TAG_ENV: tuning.metric},
        )
        for pool in pools
    ]
    # No dollar cap of the study's own (tuning_spec.SINGLE_JOB_INPUTS): the cap stays the training job's.
    trial_common = {k: v for k, v in common.items() if k != "max_cost_usd"}
    trial_job = CustomJobArgs(
        display_name=display_name, worker_pools=trial_pools, base_output_dir=base_output_dir, **trial_common
    )
    return HyperparameterTuningJob("tune", trial_job, study_args(tuning), opts)
