"""What a stack's jobs may cost, read from the resources the program declares.

A job is any resource whose dynamic provider runs the shared job lifecycle (a JobProvider): its kind says its
shapes and its worst case, so a new job kind appears here as soon as the stack declares one. Its inputs go
through the provider's own defaults and checks, as `pulumi preview` would put them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.plan.program import Declared
from infra.vertex.cost import limits
from infra.vertex.cost.preview import ShapeCost
from infra.vertex.lifecycle.job_provider import JobProvider

LOCAL_RUNNER = "local"


@dataclass(frozen=True)
class PlannedShape:
    """One shape a job may run on, in the order tried, with its hourly figure (None: no sourced price)."""

    name: str  # "shape", "fallback 1", "shape in us-east1", ...
    machine_type: str
    accelerator_type: str | None
    accelerator_count: int
    scheduling_strategy: str
    region: str
    replicas: int  # machines of this shape, which hourly_usd pays for together
    hourly_usd: float | None
    bound: bool  # hourly_usd is the on-demand price bounding a Spot/FLEX_START shape without its own
    missing: tuple[
        str, ...
    ]  # when hourly_usd is None: what has no sourced price, e.g. `NVIDIA_L4 (us-central1, SPOT)`
    skipped: str | None = None  # why the job's price limits skip it (cost/limits.py); None: in the chain
    skip_key: str | None = None  # the stack key that skips it: maxCostUsd or maxHourlyUsd

    def as_json(self) -> dict[str, Any]:
        return {
            "machine_type": self.machine_type,
            "accelerator_type": self.accelerator_type,
            "accelerator_count": self.accelerator_count,
            "scheduling_strategy": self.scheduling_strategy,
            "region": self.region,
            "hourly_usd": None if self.hourly_usd is None else round(self.hourly_usd, 6),
            "hourly_usd_is_on_demand_bound": self.bound,
            "skipped": self.skipped or False,
        }


@dataclass(frozen=True)
class PlannedJob:
    name: str  # the resource's name in the stack: data-prep, tune, train
    kind: str  # the Vertex resource: CustomJob, HyperparameterTuningJob
    runner: str
    timeout_seconds: int | None
    shapes: tuple[PlannedShape, ...]
    worst_case_usd: float | None
    failures: tuple[tuple[str, str], ...]  # what the provider's check would refuse: (input, reason)
    max_cost_usd: float | None = None  # the job's dollar cap (maxCostUsd), where it has one
    allow_unpriced_shapes: bool = False  # allowUnpricedShapes: unpriced shapes run, their time uncounted

    @property
    def local(self) -> bool:
        return self.runner == LOCAL_RUNNER

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "runner": self.runner,
            "shapes": [shape.as_json() for shape in self.shapes],
            "worst_case_usd": None if self.worst_case_usd is None else round(self.worst_case_usd, 2),
            "max_cost_usd": self.max_cost_usd,
            "allow_unpriced_shapes": self.allow_unpriced_shapes,
        }


def _shape(cost: ShapeCost, local: bool) -> PlannedShape:
    shape = cost.shape
    hourly: float | None
    if local:
        hourly, bound = 0.0, False
    else:
        hourly, bound = (None, False) if cost.rate is None else (cost.rate.usd, cost.rate.bound)
    return PlannedShape(
        cost.name,
        shape.machine_type,
        shape.accelerator_type or None,
        shape.accelerator_count,
        shape.scheduling_strategy,
        shape.region,
        cost.replicas,
        hourly,
        bound,
        () if local else cost.missing,
        None if local else cost.skipped,
        None if local or cost.skip_key is None else limits.STACK_KEYS[cost.skip_key],
    )


def planned_job(resource: Declared) -> PlannedJob | None:
    """The job `resource` runs, priced; None when it is not a job."""
    provider = resource.provider()
    if not isinstance(provider, JobProvider):
        return None
    kind = provider.kind
    props = provider.spec.with_defaults(resource.props())
    failures = tuple(provider.spec.validate(props))
    runner = str(props.get("runner", "vertex"))
    if failures:
        return PlannedJob(
            resource.name, kind.api_kind, runner, props.get("timeout_seconds"), (), None, failures
        )
    local = runner == LOCAL_RUNNER
    shapes = tuple(_shape(cost, local) for cost in kind.shape_costs(props))
    worst = 0.0 if local else kind.worst_case_usd(props)
    cap = props.get("max_cost_usd")
    allow = bool(props.get("allow_unpriced_shapes"))
    return PlannedJob(
        resource.name, kind.api_kind, runner, props.get("timeout_seconds"), shapes, worst, (), cap, allow
    )


def planned_jobs(resources: list[Declared]) -> list[PlannedJob]:
    """Every job the stack declares, in the order declared (the order they run in)."""
    return [job for job in map(planned_job, resources) if job is not None]
