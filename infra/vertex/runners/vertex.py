"""CustomJobs on Vertex AI through the JobServiceClient (regional endpoint, or the emulator)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport

from infra.dynamic.endpoints import client_kwargs, vertex_endpoint
from infra.vertex.capacity.placement import region_of, shape_from
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.errors import JobError, explain, with_retry
from infra.vertex.lifecycle.status import JobStatus, iso
from infra.vertex.runners.submitted import adoptable, custom_job_shape

# Deadline of each API call: a hung connection then surfaces as DEADLINE_EXCEEDED, which is retried.
CALL_TIMEOUT_SECONDS = 60.0
# How long delete waits for Vertex's long-running delete operation.
DELETE_WAIT_SECONDS = 300.0
T = TypeVar("T")
_CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


class VertexRunner:
    """CustomJobs on Vertex AI's regional endpoint, or on `VERTEX_AI_EMULATOR_HOST` without credentials."""

    # The job kind, and the JobServiceClient method stem that serves it (create_custom_job, list_custom_jobs,
    # ...): a runner of another job kind (vertex_tuning.py, vertex_batch.py) changes these and _status.
    KIND = "CustomJob"
    METHOD = "custom_job"
    LIST_REQUEST: Any = aiplatform_v1.ListCustomJobsRequest
    # The console page of the job kind: python-aiplatform's `_job_type` (jobs.py: CustomJob and
    # HyperparameterTuningJob "training", BatchPredictionJob "batch-predictions").
    JOB_TYPE = "training"

    def __init__(self, project: str, region: str, first_retry_delay: float = 1.0):
        self.project = project
        self.region = region
        self.parent = f"projects/{project}/locations/{region}"
        self.first_retry_delay = first_retry_delay
        self._client: aiplatform_v1.JobServiceClient | None = None

    @property
    def client(self) -> aiplatform_v1.JobServiceClient:
        if self._client is None:
            self._client = aiplatform_v1.JobServiceClient(
                **client_kwargs(JobServiceGrpcTransport, vertex_endpoint(self.region))
            )
        return self._client

    def console_url(self, name: str) -> str:
        # As google-cloud-aiplatform 2.7.0 builds it (jobs.py: _Job._dashboard_uri, CustomJob._job_type).
        job_id = name.rsplit("/", 1)[-1]
        return (
            f"https://console.cloud.google.com/agent-platform/locations/{self.region}/{self.JOB_TYPE}/{job_id}"
            f"?project={self.project}"
        )

    def _fields(self, job: Any, shape: dict[str, Any]) -> dict[str, Any]:
        """What a status of any job kind reads from the job (they share these proto fields), on `shape`."""
        return {
            "name": job.name,
            "state": job.state.name,
            "console_url": self.console_url(job.name),
            "error": error_text(job),
            "create_time": iso(job.create_time),
            "start_time": iso(job.start_time),
            "end_time": iso(job.end_time),
            "labels": dict(job.labels),
            "shape": shape_from(shape, region_of(job.name) or ""),
        }

    def _status(self, job: aiplatform_v1.CustomJob) -> JobStatus:
        return JobStatus(**self._fields(job, custom_job_shape(job)))

    def _call(self, what: str, call: Callable[[], T]) -> T:
        try:
            return with_retry(call, what, self.first_retry_delay)
        except gexc.GoogleAPICallError as exc:
            # From None: the host prints the whole exception chain; the explanation keeps the cause's text.
            raise explain(exc, what, self.project, self.region) from None

    def _on(
        self, verb: str, what: str, name: str, gone: tuple[type[Exception], ...] = (gexc.NotFound,)
    ) -> Any:
        """`verb` on the job `name`: the API's answer, or None when the API refused it with one of `gone`."""
        try:
            return self._call(
                f"{what} {name}", lambda: self._method(verb)(name=name, timeout=CALL_TIMEOUT_SECONDS)
            )
        except JobError as exc:
            if isinstance(exc.api_error, gone):
                return None
            raise

    def _method(self, verb: str) -> Any:
        return getattr(self.client, f"{verb}_{self.METHOD}{'s' if verb == 'list' else ''}")

    def create(self, job: Any) -> JobStatus:
        key = job.labels[KEY_LABEL]
        submitted = False

        def submit() -> Any:
            # A retry may follow a create whose response was lost: look for that job before submitting again.
            nonlocal submitted
            if submitted:
                found = self._find(key)
                if found is not None:
                    return found
            submitted = True
            return self._method("create")(
                parent=self.parent, **{self.METHOD: job}, timeout=CALL_TIMEOUT_SECONDS
            )

        created = self._call(f"Creating {self.KIND} {job.display_name!r}", submit)
        return created if isinstance(created, JobStatus) else self._status(created)

    def get(self, name: str) -> JobStatus | None:
        job = self._on("get", "Reading", name)
        return None if job is None else self._status(job)

    def _find(self, key: str) -> JobStatus | None:
        request = self.LIST_REQUEST(parent=self.parent, filter=f'labels.{KEY_LABEL}="{key}"')
        jobs = self._method("list")(request=request, timeout=CALL_TIMEOUT_SECONDS)
        return adoptable((self._status(job) for job in jobs), key)

    def find_by_key(self, key: str) -> JobStatus | None:
        return self._call(f"Listing {self.KIND}s labelled {KEY_LABEL}={key}", lambda: self._find(key))

    def cancel(self, name: str) -> None:
        # NotFound: nothing to stop. FailedPrecondition: already terminal or already cancelling.
        self._on("cancel", "Cancelling", name, (gexc.NotFound, gexc.FailedPrecondition))

    def delete(self, name: str) -> None:
        operation = self._on("delete", "Deleting", name)
        if operation is None:
            return
        try:
            operation.result(timeout=DELETE_WAIT_SECONDS)
        except (concurrent.futures.TimeoutError, gexc.RetryError):
            raise JobError(
                f"Vertex AI accepted the deletion of {name} but it had not finished after "
                f"{DELETE_WAIT_SECONDS:.0f}s (operation {operation.operation.name}). Check "
                f"{self.console_url(name)}; once the job is gone, run `pulumi refresh` (or `pulumi destroy` "
                "again) so the stack forgets it."
            ) from None
        except gexc.GoogleAPICallError as exc:
            if not isinstance(exc, gexc.NotFound):
                raise explain(exc, f"Deleting {name}", self.project, self.region) from None


def error_text(job: aiplatform_v1.CustomJob) -> str:
    """The job's error with its google.rpc code kept (8 = RESOURCE_EXHAUSTED: quota or capacity)."""
    if not job.error or not (job.error.message or job.error.code):
        return ""
    return f"{job.error.message} (error code {job.error.code} {_CODE_NAMES.get(job.error.code, 'UNKNOWN')})"
