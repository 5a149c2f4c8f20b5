"""What a live Vertex AI job costs an hour: its machines and accelerators at the project's sourced training
prices (infra/vertex/cost/pricing.py: the Cloud Billing catalog, else the cited price table), the on-demand
price standing as the bound of a Spot or FLEX_START shape; None where a part has no price.

A kind supplies only where its machines are: a CustomJob's worker pools; a study's trial pools times its
parallel trials (that many trials run at once). A batch prediction is billed at prediction prices, which are
not the training prices these are (Vertex AI pricing lists them apart): it has no sourced price here.
"""

from __future__ import annotations

from typing import Any

from infra.guard.live_jobs import LiveJob
from infra.vertex.capacity.placement import Pool
from infra.vertex.cost.pricing import Rate, shape_rate

# Scheduling strategies the prices know; the deprecated ON_DEMAND / LOW_COST and an unset one run on demand.
PRICED_STRATEGIES = ("STANDARD", "SPOT", "FLEX_START")


def _pool(machine: Any, replicas: int) -> Pool:
    count = int(machine.accelerator_count)
    return Pool(
        machine_type=machine.machine_type,
        accelerator_type=machine.accelerator_type.name if count else None,
        accelerator_count=count,
        replica_count=replicas,
    )


def _custom_pools(spec: Any, times: int) -> tuple[list[Pool], str]:
    pools = [
        _pool(p.machine_spec, int(p.replica_count) * times)
        for p in spec.worker_pool_specs
        if p.machine_spec.machine_type
    ]
    strategy = spec.scheduling.strategy.name
    return pools, strategy if strategy in PRICED_STRATEGIES else "STANDARD"


def shape(job: LiveJob) -> tuple[list[Pool], str] | None:
    """(pools, scheduling strategy) of what the job runs at once; None for a kind these prices miss."""
    found = job.resource
    if found is None:
        return None
    if job.kind.name == "CustomJob":
        return _custom_pools(found.job_spec, 1)
    if job.kind.name == "HyperparameterTuningJob":
        return _custom_pools(found.trial_job_spec, max(int(found.parallel_trial_count), 1))
    return None  # a kind without training prices (a batch prediction)


def hourly(job: LiveJob, project: str) -> Rate | None:
    found = shape(job)
    if found is None or not found[0]:
        return None
    pools, strategy = found
    return shape_rate(job.region, pools, strategy, project)
