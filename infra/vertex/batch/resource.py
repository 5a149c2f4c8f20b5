"""The batch prediction as a Pulumi resource: typed args in, the job's outputs as attributes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic

from infra.vertex.batch import spec
from infra.vertex.batch_provider import BatchPredictionProvider

# The type token the engine (and the mock runtime) sees; changing it would replace every existing job.
RESOURCE_TYPE = "pulumi-python:dynamic/vertex:BatchPredictionJob"


@dataclass
class BatchPredictionArgs:
    project: pulumi.Input[str]
    region: str
    display_name: pulumi.Input[str]
    images: pulumi.Input[str]  # gs:// prefix of JPEG/PNG files (a local folder for runner local)
    output_dir: pulumi.Input[str]  # predictions, instances.jsonl and run.json go under it
    service_account: pulumi.Input[str]
    labels: dict[str, str]
    timeout_seconds: int
    artifact_uri: pulumi.Input[str] | None = None  # the trainer's model dir (with serving_image); or
    serving_image: pulumi.Input[str] | None = None  # the stack's serving image by digest ("local:..." here)
    model: pulumi.Input[str] | None = None  # a Model Registry name, optionally @version
    machine_type: str = "n1-standard-4"
    accelerator_type: str | None = None
    accelerator_count: int = 0
    starting_replica_count: int = 1
    max_replica_count: int | None = None  # default: starting_replica_count
    reservation_affinity: dict[str, str] | None = None  # {type, reservation}: MachineSpec's
    fallbacks: list[dict[str, Any]] | None = None  # machine_type, accelerator_*, reservation_affinity
    max_cost_usd: float | None = None
    max_hourly_usd: float | None = None  # cost/limits.py, as a CustomJob's
    allow_unpriced_shapes: bool | None = None
    queue_timeout_seconds: int | None = None
    wait: bool = True
    poll_interval_seconds: float = 30.0
    runner: str = "vertex"  # "vertex" | "local"


def to_props(args: BatchPredictionArgs) -> dict[str, Any]:
    """The contract's snake_case props (None values left out, as Pulumi would drop them)."""
    return {k: v for k, v in vars(args).items() if v is not None}


class BatchPrediction(pulumi.dynamic.Resource, module="vertex", name="BatchPredictionJob"):
    """A Vertex AI BatchPredictionJob (or a local run of the same predictions); destroy stops it."""

    job_name: pulumi.Output[str]
    state: pulumi.Output[str]
    console_url: pulumi.Output[str]
    predictions_dir: pulumi.Output[str]
    completion_stats: pulumi.Output[dict[str, int]]
    duration_seconds: pulumi.Output[float]
    estimated_cost_usd: pulumi.Output[float | None]
    placement: pulumi.Output[dict[str, Any]]
    attempts: pulumi.Output[list[dict[str, Any]]]

    def __init__(self, name: str, args: BatchPredictionArgs, opts: pulumi.ResourceOptions | None = None):
        outputs = dict.fromkeys(spec.OUTPUTS)
        super().__init__(BatchPredictionProvider(), name, {**to_props(args), **outputs}, opts)
