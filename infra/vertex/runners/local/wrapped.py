"""A job kind run here as the one replica of a local CustomJob (a study, a batch prediction), so the
LocalRunner's records, supervisor, cancel and delete serve it."""

from __future__ import annotations

from typing import Any

from google.cloud import aiplatform_v1
from google.protobuf import duration_pb2

from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local.runner import LocalRunner


def one_replica_job(
    job: Any,
    module: str,
    args: list[str],
    timeout_seconds: int,
    machine: aiplatform_v1.MachineSpec | None = None,
    base: str = "",
) -> aiplatform_v1.CustomJob:
    """A local CustomJob with `job`'s name and labels whose one replica runs `python -m module args`. With
    `machine` it carries that machine as a STANDARD shape (the job record's shape); else it has none."""
    pool = aiplatform_v1.WorkerPoolSpec(
        machine_spec=machine or aiplatform_v1.MachineSpec(machine_type="local"),
        replica_count=1,
        container_spec=aiplatform_v1.ContainerSpec(
            image_uri="local", command=["python", "-m", module], args=args
        ),
    )
    scheduling = aiplatform_v1.Scheduling(timeout=duration_pb2.Duration(seconds=timeout_seconds))
    if machine is not None:
        scheduling.strategy = aiplatform_v1.Scheduling.Strategy.STANDARD  # type: ignore[assignment]  # proto-plus
    spec = aiplatform_v1.CustomJobSpec(worker_pool_specs=[pool], scheduling=scheduling)
    if base:
        spec.base_output_directory = aiplatform_v1.GcsDestination(output_uri_prefix=base)
    return aiplatform_v1.CustomJob(display_name=job.display_name, labels=dict(job.labels), job_spec=spec)


class WrappedLocalRunner:
    """The five verbs of a runner over a LocalRunner; a subclass gives `wrap` and `status`."""

    def __init__(self, base_output_dir: str):
        self.jobs = LocalRunner(base_output_dir)

    def wrap(self, job: Any) -> aiplatform_v1.CustomJob:
        """The local CustomJob whose one replica runs `job`."""
        raise NotImplementedError

    def status(self, status: JobStatus) -> JobStatus:
        """The kind's status of the local job `status`."""
        raise NotImplementedError

    def _status(self, status: JobStatus | None) -> Any:
        return None if status is None else self.status(status)

    def create(self, job: Any) -> Any:
        return self.status(self.jobs.create(self.wrap(job)))

    def get(self, name: str) -> Any:
        return self._status(self.jobs.get(name))

    def find_by_key(self, key: str) -> Any:
        return self._status(self.jobs.find_by_key(key))

    def cancel(self, name: str) -> None:
        self.jobs.cancel(name)

    def delete(self, name: str) -> None:
        self.jobs.delete(name)
