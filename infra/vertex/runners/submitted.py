"""What a submitted job carries, read back: its key label (the job to adopt) and its shape (JobStatus.shape:
a `placement` without its region, from the chief's MachineSpec and Scheduling.strategy)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.cloud import aiplatform_v1

from infra.vertex.capacity.machines import STRATEGIES
from infra.vertex.capacity.reservations import Reservation
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.status import ADOPTABLE_STATES, JobStatus


def adoptable(jobs: Iterable[JobStatus | None], key: str) -> JobStatus | None:
    """The newest live or succeeded job labelled `key` (checked here too, in case a service ignores part of
    its list filter)."""
    matches = [
        j for j in jobs if j is not None and j.labels.get(KEY_LABEL) == key and j.state in ADOPTABLE_STATES
    ]
    return max(matches, key=lambda j: j.create_time) if matches else None


def custom_job_shape(job: aiplatform_v1.CustomJob) -> dict[str, Any]:
    """Empty when the spec names no strategy this module knows (then the attempt label says the shape)."""
    strategy = job.job_spec.scheduling.strategy.name
    pools = job.job_spec.worker_pool_specs
    if strategy not in STRATEGIES or not pools:
        return {}
    return machine_shape(pools[0].machine_spec, strategy)


def machine_shape(machine: aiplatform_v1.MachineSpec, strategy: str) -> dict[str, Any]:
    count = int(machine.accelerator_count)
    kind = machine.accelerator_type.name if count else ""
    found: dict[str, Any] = {
        "machine_type": machine.machine_type,
        "accelerator_type": kind,
        "accelerator_count": count,
        "scheduling_strategy": strategy,
    }
    # The reservation too: the shape an attempt was priced on is the one read back (a reserved machine has
    # no sourced price, pricing.RESERVED_WHY).
    affinity = machine.reservation_affinity
    if affinity.reservation_affinity_type.name != "TYPE_UNSPECIFIED":
        found["reservation_affinity"] = Reservation(
            affinity.reservation_affinity_type.name, affinity.values[0] if affinity.values else ""
        ).as_dict()
    return found
