"""Batch predictions on this machine: runners/local/batch.py as the one replica of a local CustomJob, so the
LocalRunner's records, supervisor, cancel and delete serve it; the status counts its output lines."""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path

from google.cloud import aiplatform_v1
from google.protobuf import duration_pb2

from infra.vertex.batch.status import BatchStatus
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local.batch import ERRORS_FILE, PREDICTIONS_FILE
from infra.vertex.runners.local.runner import LocalRunner, job_dir

# The supervisor's own cap; the lifecycle cancels the job at its timeout_seconds first (kind.py).
SUPERVISOR_TIMEOUT_SECONDS = 7 * 24 * 3600


def predictions_dir(job: aiplatform_v1.BatchPredictionJob) -> str:
    """`prediction-<display name>-<create time>` under the output directory, as Vertex names it."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    base = job.output_config.gcs_destination.output_uri_prefix.rstrip("/")
    return f"{base}/prediction-{job.display_name}-{stamp}"


def wrapper_job(job: aiplatform_v1.BatchPredictionJob, into: str) -> aiplatform_v1.CustomJob:
    """A local CustomJob on the batch job's machine whose one replica runs the prediction."""
    pool = aiplatform_v1.WorkerPoolSpec(
        machine_spec=job.dedicated_resources.machine_spec,
        replica_count=1,
        container_spec=aiplatform_v1.ContainerSpec(
            image_uri="local",
            command=["python", "-m", "infra.vertex.runners.local.batch"],
            args=[into, job.unmanaged_container_model.artifact_uri, job.input_config.gcs_source.uris[0]],
        ),
    )
    return aiplatform_v1.CustomJob(
        display_name=job.display_name,
        labels=dict(job.labels),
        job_spec=aiplatform_v1.CustomJobSpec(
            worker_pool_specs=[pool],
            scheduling=aiplatform_v1.Scheduling(
                timeout=duration_pb2.Duration(seconds=SUPERVISOR_TIMEOUT_SECONDS),
                strategy=aiplatform_v1.Scheduling.Strategy.STANDARD,  # so the record carries the shape
            ),
        ),
    )


def _lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    except FileNotFoundError:
        return 0


class LocalBatchRunner:
    """The five verbs of a runner, for batch predictions run by batch.py under a LocalRunner."""

    def __init__(self, output_dir: str):
        self.jobs = LocalRunner(output_dir)

    def _status(self, status: JobStatus | None) -> BatchStatus | None:
        if status is None:
            return None
        record = json.loads((job_dir(str(self.jobs.base), status.name) / "job.json").read_text())
        into = record["replicas"][0]["argv"][-3]
        done, failed = _lines(Path(into) / PREDICTIONS_FILE), _lines(Path(into) / ERRORS_FILE)
        stats = {"successful_count": done, "failed_count": failed, "incomplete_count": 0}
        return BatchStatus(**dataclasses.asdict(status), predictions_dir=into, completion_stats=stats)

    def create(self, job: aiplatform_v1.BatchPredictionJob) -> BatchStatus:
        status = self._status(self.jobs.create(wrapper_job(job, predictions_dir(job))))
        assert status is not None
        return status

    def get(self, name: str) -> BatchStatus | None:
        return self._status(self.jobs.get(name))

    def find_by_key(self, key: str) -> BatchStatus | None:
        return self._status(self.jobs.find_by_key(key))

    def cancel(self, name: str) -> None:
        self.jobs.cancel(name)

    def delete(self, name: str) -> None:
        self.jobs.delete(name)
