"""The hyperparameter tuning job as a Pulumi resource: a trial CustomJob's args plus the study, trials out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic

from infra.vertex.custom_job.resource import CustomJobArgs, to_props
from infra.vertex.tuning import spec as tuning_spec
from infra.vertex.tuning_provider import TuningJobProvider

# The type token the engine (and the mock runtime) sees; changing it would replace every existing study.
RESOURCE_TYPE = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"


@dataclass
class Parameter:
    """One tuned parameter: `parameter_id` is the trial's flag name (Vertex passes `--<id>=<value>`)."""

    parameter_id: str
    type: str  # DOUBLE, INTEGER, DISCRETE or CATEGORICAL (aiplatform_v1 StudySpec.ParameterSpec)
    values: list[float | int | str] | None = None  # DISCRETE / CATEGORICAL
    min: float | int | None = None  # DOUBLE / INTEGER
    max: float | int | None = None
    scale: str | None = None  # UNIT_LINEAR_SCALE, UNIT_LOG_SCALE or UNIT_REVERSE_LOG_SCALE


@dataclass
class StudyArgs:
    metric_id: str
    parameters: list[Parameter]
    max_trial_count: int
    parallel_trial_count: int
    goal: str = "MAXIMIZE"
    algorithm: str = "default"  # default (Vertex's), grid or random
    max_failed_trial_count: int = 0  # 0: Vertex decides


def tuning_props(trial_job: CustomJobArgs, study: StudyArgs) -> dict[str, Any]:
    """The provider's props: the trial job's (as a CustomJob's) and the study's, None values left out."""
    parameters = [{k: v for k, v in vars(p).items() if v is not None} for p in study.parameters]
    return {**to_props(trial_job), **vars(study), "parameters": parameters}


class HyperparameterTuningJob(pulumi.dynamic.Resource, module="vertex", name="HyperparameterTuningJob"):
    """A Vertex AI HyperparameterTuningJob (or a local study of the same trials); destroy stops it."""

    job_name: pulumi.Output[str]
    state: pulumi.Output[str]
    console_url: pulumi.Output[str]
    trials: pulumi.Output[list[dict[str, Any]]]
    best_trial: pulumi.Output[str]
    best_parameters: pulumi.Output[dict[str, Any]]
    best_metric: pulumi.Output[float | None]
    duration_seconds: pulumi.Output[float]
    estimated_cost_usd: pulumi.Output[float | None]
    estimated_cost_bound: pulumi.Output[bool | None]  # as the CustomJob's: the cost is at most the figure
    placement: pulumi.Output[dict[str, Any]]  # the trial shape the study ran on
    attempts: pulumi.Output[list[dict[str, Any]]]  # one per study submitted or shape skipped

    def __init__(
        self,
        name: str,
        trial_job: CustomJobArgs,
        study: StudyArgs,
        opts: pulumi.ResourceOptions | None = None,
    ):
        outputs = dict.fromkeys(tuning_spec.OUTPUTS)
        super().__init__(TuningJobProvider(), name, {**tuning_props(trial_job, study), **outputs}, opts)
