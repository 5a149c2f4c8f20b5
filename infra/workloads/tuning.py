"""The stack's hyperparameter tuning job: the training job's pools as the trial job, and the study."""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi

from infra.config.tuning import TuningConfig
from infra.vertex.custom_job.resource import CustomJobArgs, WorkerPool
from infra.vertex.tuning.resource import HyperparameterTuningJob
from infra.vertex.tuning.spec import SINGLE_JOB_INPUTS
from infra.workloads.best_parameters import METRIC_TAG_ENV, study_args


def study_dir(root: str, study_hash: str) -> str:
    """One directory per study (its trials' outputs in <dir>/<trial id>/), so a changed study never resumes
    an earlier study's trial checkpoints."""
    return f"{root}/tuning/{study_hash}"


def tuning_job(
    tuning: TuningConfig,
    display_name: str,
    pools: list[WorkerPool],
    trial_args: list[str],
    base_output_dir: str,
    job_args: dict[str, Any],
    opts: pulumi.ResourceOptions,
) -> HyperparameterTuningJob:
    """The study over the training job's pools and settings (scheduling strategy, fallbacks and restart-all
    included): the trial's arguments (no shared checkpoint dir, no tuned flags), the metric named to the
    trainer."""
    trial_pools = [
        dataclasses.replace(pool, args=list(trial_args), env={**pool.env, METRIC_TAG_ENV: tuning.metric})
        for pool in pools
    ]
    # Resubmission and the dollar cap are a single job's (tuning_spec.SINGLE_JOB_INPUTS): the study has
    # neither (docs/tuning.md says what that means for cost). Fallback shapes it shares: a study that cannot
    # get machines is submitted again on the next shape.
    trial_common = {k: v for k, v in job_args.items() if k not in SINGLE_JOB_INPUTS}
    trial_job = CustomJobArgs(
        display_name=display_name, worker_pools=trial_pools, base_output_dir=base_output_dir, **trial_common
    )
    return HyperparameterTuningJob("tune", trial_job, study_args(tuning), opts)
