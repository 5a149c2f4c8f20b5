"""Batch predictions on this machine: runners/local/batch.py as the one replica of a local CustomJob
(wrapped.py), its output lines counted as Vertex's CompletionStats count instances."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from google.cloud import aiplatform_v1

from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.batch_status import BatchStatus
from infra.vertex.runners.local.batch import ERRORS_FILE, RESULTS_FILE
from infra.vertex.runners.local.runner import job_dir
from infra.vertex.runners.local.wrapped import WrappedLocalRunner, one_replica_job

# The supervisor's own cap; the lifecycle cancels the job at its timeout_seconds first (kind.py).
SUPERVISOR_TIMEOUT_SECONDS = 7 * 24 * 3600
BATCH_MODULE = "infra.vertex.runners.local.batch"


def predictions_dir(job: aiplatform_v1.BatchPredictionJob) -> str:
    """`prediction-<display name>-<create time>` under the output directory, as Vertex names it."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    base = job.output_config.gcs_destination.output_uri_prefix.rstrip("/")
    return f"{base}/prediction-{job.display_name}-{stamp}"


def _lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    except FileNotFoundError:
        return 0


class LocalBatchRunner(WrappedLocalRunner):
    """Batch predictions run by batch.py under a LocalRunner."""

    def wrap(self, job: aiplatform_v1.BatchPredictionJob) -> aiplatform_v1.CustomJob:
        """The prediction's one replica, on the batch job's machine."""
        args = [
            predictions_dir(job),
            job.unmanaged_container_model.artifact_uri,
            job.input_config.gcs_source.uris[0],
            job.instance_config.key_field,
        ]
        machine = job.dedicated_resources.machine_spec
        return one_replica_job(job, BATCH_MODULE, args, SUPERVISOR_TIMEOUT_SECONDS, machine)

    def status(self, status: JobStatus) -> BatchStatus:
        record = json.loads((job_dir(str(self.jobs.base), status.name) / "job.json").read_text())
        argv = record["replicas"][0]["argv"]
        args = argv[argv.index(BATCH_MODULE) + 1 :]
        into = args[0]
        if len(args) < 4:  # a record of an earlier version (a file list, its own file names): none counted
            return BatchStatus(**vars(status), predictions_dir=into)
        done, failed = _lines(Path(into) / RESULTS_FILE), _lines(Path(into) / ERRORS_FILE)
        incomplete = max(_lines(Path(args[2])) - done - failed, 0)
        stats = {"successful_count": done, "failed_count": failed, "incomplete_count": incomplete}
        return BatchStatus(**vars(status), predictions_dir=into, completion_stats=stats)
