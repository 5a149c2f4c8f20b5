"""The Vertex AI training job as a Pulumi resource: typed args in, job outputs as attributes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi.dynamic

from infra.vertex.cost.preview import worst_case_usd
from infra.vertex.custom_job import spec
from infra.vertex.provider import CustomJobProvider

# The type token the engine (and the mock runtime) sees; changing it would replace every existing job.
RESOURCE_TYPE = "pulumi-python:dynamic/vertex:CustomJob"


@dataclass
class WorkerPool:
    machine_type: str
    image_uri: pulumi.Input[str]
    command: list[str]
    args: list[pulumi.Input[str]] = field(default_factory=list)
    env: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    replica_count: int = 1
    accelerator_type: str | None = None  # Vertex enum name, e.g. "NVIDIA_TESLA_T4"
    accelerator_count: int = 0
    boot_disk_size_gb: int = 100
    boot_disk_type: str | None = None  # unset: the machine type's default disk


@dataclass
class CustomJobArgs:
    project: pulumi.Input[str]
    region: str
    display_name: str
    worker_pools: list[WorkerPool]  # index 0 = chief; 1 workers; 2 PS/reduction; 3 evaluators
    service_account: pulumi.Input[str]
    base_output_dir: pulumi.Input[str]
    labels: dict[str, str]
    timeout_seconds: int
    spot: bool | None = None  # Spot VMs; or say it with scheduling_strategy (the two must agree)
    restart_on_worker_restart: bool = False
    tensorboard: pulumi.Input[str] | None = None
    wait: bool = True
    poll_interval_seconds: float = 30.0
    runner: str = "vertex"  # "vertex" | "local"
    queue_timeout_seconds: int | None = None  # how long it may wait to start (default: spec.DEFAULTS)
    max_restarts: int | None = None  # new attempts after a running job was preempted (provider default 3)
    scheduling_strategy: str | None = None  # STANDARD, SPOT or FLEX_START (default from spot)
    max_wait_seconds: int | None = None  # FLEX_START: scheduling.max_wait_duration
    fallbacks: list[dict[str, Any]] | None = None  # alternative shapes, tried in order (placement.py)
    max_cost_usd: float | None = None  # cancelled when its running cost (all attempts) reaches this
    # A shape priced above this (USD/h, every replica) is skipped; a fallback entry may carry its own.
    # allow_unpriced_shapes: a shape without a price runs under these limits (cost/limits.py).
    max_hourly_usd: float | None = None
    allow_unpriced_shapes: bool | None = None
    # Regions tried after the home region, each with the whole chain; a reservation for the job's machines
    # ({type, reservation}); how long to go round the whole chain again (0: once). See placement.py.
    fallback_regions: list[str] | None = None
    reservation_affinity: dict[str, str] | None = None
    capacity_deadline_seconds: int | None = None
    # The Vertex AI experiment and run the job is compared in (custom_job/experiments.py).
    experiment: str | None = None
    experiment_run: pulumi.Input[str] | None = None
    # The job this one needs to have succeeded (workloads/gate.py): not what the job computes, never diffed.
    upstream_job: pulumi.Input[str] | None = None
    # How the pools' image was made, by digest (the image build's `builder_image`, `base_images`): written
    # into run.json, so a run names what it ran; changes in place (spec.IN_PLACE_INPUTS).
    image_sources: pulumi.Input[dict[str, Any]] | None = None


# The args besides the pools that make the shape chain (placement.shapes), so its prices.
CHAIN_ARGS = ("fallbacks", "fallback_regions", "reservation_affinity")


def _known(value: Any) -> bool:
    """A plain value, with no Output anywhere in it."""
    if isinstance(value, dict):
        return all(_known(v) for v in value.values())
    if isinstance(value, list):
        return all(_known(v) for v in value)
    return not isinstance(value, pulumi.Output)


def to_props(args: CustomJobArgs) -> dict[str, Any]:
    """The contract's snake_case props for these args (None values left out, as Pulumi would drop them)."""
    pools = [{k: v for k, v in vars(pool).items() if v is not None} for pool in args.worker_pools]
    props = {k: v for k, v in vars(args).items() if v is not None and k != "worker_pools"}
    return {**props, "worker_pools": pools}


class CustomJob(pulumi.dynamic.Resource, module="vertex", name="CustomJob"):
    """A Vertex AI CustomJob (or a local run of the same pools); `pulumi up` runs it, destroy stops it."""

    job_name: pulumi.Output[str]
    state: pulumi.Output[str]
    console_url: pulumi.Output[str]
    model_dir: pulumi.Output[str]
    create_time: pulumi.Output[str]
    start_time: pulumi.Output[str]
    end_time: pulumi.Output[str]
    error: pulumi.Output[str]
    duration_seconds: pulumi.Output[float]
    estimated_cost_usd: pulumi.Output[float | None]
    # True: the figure counts Spot/FLEX_START time at the on-demand price, so the cost is at most that.
    estimated_cost_bound: pulumi.Output[bool | None]
    metrics: pulumi.Output[dict[str, Any] | None]
    placement: pulumi.Output[dict[str, Any]]
    attempts: pulumi.Output[list[dict[str, Any]]]
    cost_cap_reached: pulumi.Output[bool | None]

    def __init__(self, name: str, args: CustomJobArgs, opts: pulumi.ResourceOptions | None = None):
        outputs = dict.fromkeys(spec.OUTPUTS)
        props = to_props(args)
        super().__init__(CustomJobProvider(), name, {**props, **outputs}, opts)
        # Known before anything runs (list prices; None without a price or a known project): exported.
        # The chain must be known to price it: an Output in a key that makes it (a preview of values built
        # from upstream resources) leaves the figure out rather than failing the program.
        chain_known = all(_known(getattr(args, key)) for key in CHAIN_ARGS)
        priced = args.runner == "vertex" and isinstance(args.project, str) and chain_known
        self.worst_case_usd = worst_case_usd(props) if priced else None
