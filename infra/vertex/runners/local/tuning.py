"""Studies on this machine: the study loop (study.py) runs as a local CustomJob's one replica, so the
LocalRunner's records, supervisor, cancel and delete serve the study; its trials are in <base>/trials.json."""

from __future__ import annotations

import dataclasses
import json

from google.cloud import aiplatform_v1
from google.protobuf import duration_pb2

from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local.runner import LocalRunner
from infra.vertex.runners.local.study import TRIALS_FILE
from infra.vertex.tuning.trials import Trial, TuningStatus

# The study process's own time on top of its trials' (starting, polling, collecting).
STUDY_OVERHEAD_SECONDS = 300


def study_job(job: aiplatform_v1.HyperparameterTuningJob, base: str) -> aiplatform_v1.CustomJob:
    """A local CustomJob whose one replica runs the study; its timeout covers every wave of trials."""
    trial_timeout = int(job.trial_job_spec.scheduling.timeout.total_seconds())
    waves = -(-job.max_trial_count // job.parallel_trial_count)
    pool = aiplatform_v1.WorkerPoolSpec(
        machine_spec=aiplatform_v1.MachineSpec(machine_type="local"),
        replica_count=1,
        container_spec=aiplatform_v1.ContainerSpec(
            image_uri="local",
            command=["python", "-m", "infra.vertex.runners.local.study"],
            args=[base, aiplatform_v1.HyperparameterTuningJob.to_json(job, indent=None)],
        ),
    )
    return aiplatform_v1.CustomJob(
        display_name=job.display_name,
        labels=dict(job.labels),
        job_spec=aiplatform_v1.CustomJobSpec(
            worker_pool_specs=[pool],
            scheduling=aiplatform_v1.Scheduling(
                timeout=duration_pb2.Duration(seconds=waves * trial_timeout + STUDY_OVERHEAD_SECONDS)
            ),
            base_output_directory=aiplatform_v1.GcsDestination(output_uri_prefix=base),
        ),
    )


class LocalTuningRunner:
    """The five verbs of a runner, for studies run by study.py under a LocalRunner."""

    def __init__(self, base_output_dir: str):
        self.jobs = LocalRunner(base_output_dir)
        self.trials_file = self.jobs.base / TRIALS_FILE

    def _status(self, status: JobStatus | None) -> TuningStatus | None:
        if status is None:
            return None
        try:
            record = json.loads(self.trials_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            record = {}
        trials = tuple(Trial(**row) for row in record.get("trials", []))
        # The study's own reason (too many failed trials) reads better than its process's exit code.
        error = (record.get("error") or status.error) if status.state != "JOB_STATE_SUCCEEDED" else ""
        return TuningStatus(**{**dataclasses.asdict(status), "error": error}, trials=trials)

    def create(self, job: aiplatform_v1.HyperparameterTuningJob) -> TuningStatus:
        self.trials_file.unlink(missing_ok=True)  # an earlier study's, in a reused output dir
        status = self._status(self.jobs.create(study_job(job, str(self.jobs.base))))
        assert status is not None
        return status

    def get(self, name: str) -> TuningStatus | None:
        return self._status(self.jobs.get(name))

    def find_by_key(self, key: str) -> TuningStatus | None:
        return self._status(self.jobs.find_by_key(key))

    def cancel(self, name: str) -> None:
        self.jobs.cancel(name)

    def delete(self, name: str) -> None:
        self.jobs.delete(name)
