"""The machines each of a stack's Vertex jobs asks for, shape by shape, as the quota pre-check counts them.

The same pools, strategy and fallbacks infra/workloads/jobs.py gives the data job, the tuning study and the
training job (image, arguments and identity left out: quotas do not depend on them); each shape is applied
with the CustomJob's own placement rules and counted by infra/vertex/capacity/quotas.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.config import StackConfig
from infra.vertex.capacity import placement
from infra.vertex.capacity.quotas import QuotaNeed, quota_needs, serving_needs, trials_at_once


@dataclass(frozen=True)
class ShapeDemand:
    """One shape of a job: its place in the chain (0 = primary), where it runs, and the quotas it holds."""

    index: int
    shape: placement.Shape
    region: str
    needs: tuple[QuotaNeed, ...]

    @property
    def label(self) -> str:
        where = "primary" if self.index == 0 else f"fallback {self.index}"
        return f"{where} {self.shape}"


@dataclass(frozen=True)
class JobDemand:
    name: str
    shapes: tuple[ShapeDemand, ...]


def _pool(machine: str, accelerator: str | None, count: int, replicas: int = 1) -> dict[str, Any]:
    pool: dict[str, Any] = {"machine_type": machine, "accelerator_count": count, "replica_count": replicas}
    if accelerator:
        pool["accelerator_type"] = accelerator
    return pool


def job_shapes(props: Mapping[str, Any], parallel: int = 1) -> tuple[ShapeDemand, ...]:
    """Every shape of `props` (primary, then fallbacks), with `parallel` trials held at once."""
    found = []
    for index, shape in enumerate(placement.shapes(props)):
        region, pools = placement.on_shape(props, shape)
        if parallel > 1:
            pools = trials_at_once(pools, parallel)
        needs = tuple(quota_needs(pools, shape.scheduling_strategy))
        found.append(ShapeDemand(index, shape, region, needs))
    return tuple(found)


def _common(cfg: StackConfig) -> dict[str, Any]:
    return {"project": cfg.gcp_project, "region": cfg.region, "runner": cfg.runner, "spot": cfg.spot}


def training_props(cfg: StackConfig) -> dict[str, Any]:
    """The training job's (and each trial's) pools, strategy and capacity keys: what makes its shapes."""
    chief = _pool(cfg.machine_type, cfg.accelerator_type, cfg.accelerator_count)
    pools = [chief] + ([{**chief, "replica_count": cfg.worker_count}] if cfg.worker_count else [])
    return {**_common(cfg), **cfg.capacity.job_args(cfg.spot), "worker_pools": pools}


def jobs(cfg: StackConfig) -> list[JobDemand]:
    """The data job (unless dataSource is none), the tuning study (with `tuning`), the training job and the
    online deployment (with `endpoint` and a GPU: a CPU one's serving quota id is not documented)."""
    found = []
    if cfg.data.source != "none":
        data = {**_common(cfg), "worker_pools": [_pool(cfg.data_machine_type, None, 0)]}
        found.append(JobDemand("data-preparation job", job_shapes(data)))
    train = training_props(cfg)
    if cfg.tuning:
        parallel = cfg.tuning.parallel_trials
        found.append(JobDemand(f"tuning study ({parallel} trials at once)", job_shapes(train, parallel)))
    found.append(JobDemand("training job", job_shapes(train)))
    serving = cfg.endpoint
    needs = (
        serving_needs(serving.accelerator_type, serving.accelerator_count, serving.max_replicas, serving.spot)
        if serving
        else []
    )
    if serving and needs:
        strategy = "SPOT" if serving.spot else "STANDARD"
        shape = placement.Shape(
            serving.machine_type, serving.accelerator_type, serving.accelerator_count, strategy, cfg.region
        )
        found.append(JobDemand("online deployment", (ShapeDemand(0, shape, cfg.region, tuple(needs)),)))
    return found
