"""HyperparameterTuningJobs on Vertex AI through the JobServiceClient: the CustomJob runner's client, retries,
error explanations and deletion, with the tuning job's five methods."""

from __future__ import annotations

from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1

from infra.vertex import spec, trials
from infra.vertex.errors import JobError
from infra.vertex.status import ADOPTABLE_STATES, iso
from infra.vertex.trials import TuningStatus
from infra.vertex.vertex_runner import CALL_TIMEOUT_SECONDS, VertexRunner, error_text


class VertexTuningRunner(VertexRunner):
    """Studies on Vertex AI's regional endpoint, or on `VERTEX_AI_EMULATOR_HOST` without credentials."""

    def _status(self, job: aiplatform_v1.HyperparameterTuningJob) -> TuningStatus:  # type: ignore[override]
        metric_id = job.study_spec.metrics[0].metric_id if job.study_spec.metrics else ""
        integers = trials.integer_ids(job.study_spec)
        return TuningStatus(
            name=job.name,
            state=job.state.name,
            # As google-cloud-aiplatform builds it (jobs.py: HyperparameterTuningJob._job_type "training").
            console_url=self.console_url(job.name),
            error=error_text(job),
            create_time=iso(job.create_time),
            start_time=iso(job.start_time),
            end_time=iso(job.end_time),
            labels=dict(job.labels),
            trials=tuple(trials.from_proto(t, metric_id, integers) for t in job.trials),
        )

    def create(self, job: aiplatform_v1.HyperparameterTuningJob) -> TuningStatus:  # type: ignore[override]
        key = job.labels[spec.KEY_LABEL]
        submitted = False

        def submit() -> aiplatform_v1.HyperparameterTuningJob | TuningStatus:
            # A retry may follow a create whose response was lost: look for that study before submitting.
            nonlocal submitted
            if submitted:
                found = self._find(key)
                if found is not None:
                    return found
            submitted = True
            return self.client.create_hyperparameter_tuning_job(
                parent=self.parent, hyperparameter_tuning_job=job, timeout=CALL_TIMEOUT_SECONDS
            )

        created = self._call(f"Creating HyperparameterTuningJob {job.display_name!r}", submit)
        return created if isinstance(created, TuningStatus) else self._status(created)

    def get(self, name: str) -> TuningStatus | None:
        try:
            return self._status(
                self._call(
                    f"Reading {name}",
                    lambda: self.client.get_hyperparameter_tuning_job(
                        name=name, timeout=CALL_TIMEOUT_SECONDS
                    ),
                )
            )
        except JobError as exc:
            if isinstance(exc.api_error, gexc.NotFound):
                return None
            raise

    def _find(self, key: str) -> TuningStatus | None:  # type: ignore[override]
        request = aiplatform_v1.ListHyperparameterTuningJobsRequest(
            parent=self.parent, filter=f'labels.{spec.KEY_LABEL}="{key}"'
        )
        found = [
            self._status(job)
            for job in self.client.list_hyperparameter_tuning_jobs(
                request=request, timeout=CALL_TIMEOUT_SECONDS
            )
        ]
        matches = [j for j in found if j.labels.get(spec.KEY_LABEL) == key and j.state in ADOPTABLE_STATES]
        return max(matches, key=lambda j: j.create_time) if matches else None

    def find_by_key(self, key: str) -> TuningStatus | None:
        return self._call(
            f"Listing HyperparameterTuningJobs labelled {spec.KEY_LABEL}={key}", lambda: self._find(key)
        )

    def cancel(self, name: str) -> None:
        try:
            self._call(
                f"Cancelling {name}",
                lambda: self.client.cancel_hyperparameter_tuning_job(name=name, timeout=CALL_TIMEOUT_SECONDS),
            )
        except JobError as exc:
            if not isinstance(exc.api_error, gexc.NotFound | gexc.FailedPrecondition):
                raise

    def delete(self, name: str) -> None:
        try:
            operation = self._call(
                f"Deleting {name}",
                lambda: self.client.delete_hyperparameter_tuning_job(name=name, timeout=CALL_TIMEOUT_SECONDS),
            )
        except JobError as exc:
            if not isinstance(exc.api_error, gexc.NotFound):
                raise
            return
        self._await_deletion(name, operation)
