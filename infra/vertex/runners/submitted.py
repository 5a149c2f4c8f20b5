"""The shape a submitted job carries, read back from its request (the runners' JobStatus.shape): the wire
layouts of aiplatform_v1's CustomJob (its chief's MachineSpec and its Scheduling.strategy) and
BatchPredictionJob (BatchDedicatedResources.machine_spec), as a `placement` without its region."""

from __future__ import annotations

from typing import Any

from google.cloud import aiplatform_v1

from infra.vertex.capacity.machines import STRATEGIES
from infra.vertex.capacity.reservations import Reservation


def custom_job_shape(job: aiplatform_v1.CustomJob) -> dict[str, Any]:
    """The shape a submitted job carries (its chief's machine spec and its strategy), as a `placement`
    without its region; empty when the spec names no strategy this module knows (then the attempt label
    says the shape)."""
    strategy = job.job_spec.scheduling.strategy.name
    pools = job.job_spec.worker_pool_specs
    if strategy not in STRATEGIES or not pools:
        return {}
    machine = pools[0].machine_spec
    count = int(machine.accelerator_count)
    found: dict[str, Any] = {
        "machine_type": machine.machine_type,
        "accelerator_type": machine.accelerator_type.name if count else "",
        "accelerator_count": count,
        "scheduling_strategy": strategy,
    }
    affinity = machine.reservation_affinity
    kind = affinity.reservation_affinity_type.name
    if kind != "TYPE_UNSPECIFIED":
        found["reservation_affinity"] = Reservation(
            kind, affinity.values[0] if affinity.values else ""
        ).as_dict()
    return found


def batch_job_shape(job: aiplatform_v1.BatchPredictionJob) -> dict[str, Any]:
    """The shape a submitted job carries (its machine spec; no strategy: STANDARD), for JobStatus.shape."""
    machine = job.dedicated_resources.machine_spec
    count = int(machine.accelerator_count)
    return {
        "machine_type": machine.machine_type,
        "accelerator_type": machine.accelerator_type.name if count else "",
        "accelerator_count": count,
        "scheduling_strategy": "STANDARD",
    }
