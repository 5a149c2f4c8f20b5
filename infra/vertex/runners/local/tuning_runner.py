"""Studies on this machine: the study loop (study.py) runs as a local CustomJob's one replica, so the
LocalRunner's records, supervisor, cancel and delete serve the study; its trials are in <base>/trials.json."""

from __future__ import annotations

from google.cloud import aiplatform_v1

from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local.study import TRIALS_FILE
from infra.vertex.runners.local.supervisor import read_json
from infra.vertex.runners.local.wrapped import WrappedLocalRunner, one_replica_job
from infra.vertex.runners.trials import Trial, TuningStatus

# The study process's own time on top of its trials' (starting, polling, collecting).
STUDY_OVERHEAD_SECONDS = 300


class LocalTuningRunner(WrappedLocalRunner):
    """Studies run by study.py under a LocalRunner."""

    def wrap(self, job: aiplatform_v1.HyperparameterTuningJob) -> aiplatform_v1.CustomJob:
        """The study's one replica; its timeout covers every wave of trials."""
        (self.jobs.base / TRIALS_FILE).unlink(missing_ok=True)  # an earlier study's, in a reused output dir
        base = str(self.jobs.base)
        trial_timeout = int(job.trial_job_spec.scheduling.timeout.total_seconds())
        waves = -(-job.max_trial_count // job.parallel_trial_count)
        return one_replica_job(
            job,
            "infra.vertex.runners.local.study",
            [base, aiplatform_v1.HyperparameterTuningJob.to_json(job, indent=None)],
            waves * trial_timeout + STUDY_OVERHEAD_SECONDS,
            base=base,
        )

    def status(self, status: JobStatus) -> TuningStatus:
        record = read_json(self.jobs.base / TRIALS_FILE)
        trials = tuple(Trial(**row) for row in record.get("trials", []))
        # The study's own reason (too many failed trials) reads better than its process's exit code.
        error = (record.get("error") or status.error) if status.state != "JOB_STATE_SUCCEEDED" else ""
        return TuningStatus(**{**vars(status), "error": error}, trials=trials)
