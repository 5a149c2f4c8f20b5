"""A fake Vertex AI JobService (CustomJob methods) served over real gRPC on localhost.

Requests and responses are the library's own proto-plus types, so the real `JobServiceClient` drives it
through `VERTEX_AI_EMULATOR_HOST`. Jobs move QUEUED -> PENDING -> RUNNING -> `outcome` one step per Get
(jobs made by `add_job` stay put until `set_state`); faults are injected per method with `fail`.

Jobs live under their parent `projects/P/locations/R`, per region as Vertex keeps them (a list sees its own
region only). Capacity per shape (the chief's machine type, accelerator type and scheduling strategy), in
every region, or per region and shape (a key that starts with the region wins), as Vertex's docs describe a
region without it: STOCKOUT fails the job before it runs, after Vertex's own retries, with the
documented message ("Resources are insufficient in region: R. Try a different region or use a different
accelerator.", google.rpc code 8); QUEUED keeps it waiting (a Dynamic Workload Scheduler job waiting for
machines, or a queue for quota) until it is cancelled or the capacity changes. `region_down[R]` makes every
call on region R fail with that code (an outage, a permission missing there, an RPC it does not answer).
"""

from __future__ import annotations

import datetime
import itertools
import re

import grpc
from google.cloud import aiplatform_v1
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2
from google.rpc import status_pb2

from tests.fakes import filters
from tests.fakes.filters import Matcher, compare, token_pattern
from tests.fakes.grpc_fake import Abort, FakeService, page_of

JobState = aiplatform_v1.JobState
SERVICE = "google.cloud.aiplatform.v1.JobService"
TERMINAL = {
    JobState.JOB_STATE_SUCCEEDED,
    JobState.JOB_STATE_FAILED,
    JobState.JOB_STATE_CANCELLED,
    JobState.JOB_STATE_EXPIRED,
    JobState.JOB_STATE_PARTIALLY_SUCCEEDED,
}
_NEXT = {
    JobState.JOB_STATE_QUEUED: JobState.JOB_STATE_PENDING,
    JobState.JOB_STATE_PENDING: JobState.JOB_STATE_RUNNING,
}
STOCKOUT = "stockout"
QUEUED = "queued"
STOCKOUT_MESSAGE = (
    "Resources are insufficient in region: {region}. Try a different region or use a different accelerator."
)


def shape_of(job: aiplatform_v1.CustomJob) -> tuple[str, str, str]:
    """(machine type, accelerator type, strategy) of the job's chief: the key of `FakeJobService.capacity`."""
    machine = job.job_spec.worker_pool_specs[0].machine_spec
    accelerator = machine.accelerator_type.name if machine.accelerator_count else ""
    return machine.machine_type, accelerator, job.job_spec.scheduling.strategy.name


def region_of(name: str) -> str:
    """R of `projects/P/locations/R[/...]`."""
    parts = name.split("/")
    return parts[3] if len(parts) > 3 else ""


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class FakeJobService(FakeService):
    """In-memory CustomJob store behind a gRPC server; every attribute is safe to read from tests."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs: dict[str, aiplatform_v1.CustomJob] = {}
        # How many jobs one list page holds when the request sets no page_size (lists page, AIP-158).
        self.list_page_size = 100
        # Where created jobs end after RUNNING, and the error they carry when that is FAILED.
        self.outcome: JobState = JobState.JOB_STATE_SUCCEEDED
        self.outcome_error: str = ""
        # google.rpc code of that error (13 INTERNAL; Vertex reports quota and capacity failures as 8).
        self.outcome_error_code: int = 13
        # Outcomes (state, error) of the next created jobs, in creation order; then `outcome` again.
        self.outcomes: list[tuple[JobState, str]] = []
        self._job_outcomes: dict[str, tuple[JobState, str]] = {}
        # False: created jobs stay in their state until set_state (for tests that need a long-running job).
        self.auto_advance: bool = True
        self._advancing: set[str] = set()
        self._ids = itertools.count(1000)
        # Shapes without free machines: shape_of(job) -> STOCKOUT or QUEUED in every region, or
        # (region, *shape_of(job)) in that region only (it wins); other shapes have room.
        self.capacity: dict[tuple[str, ...], str] = {}
        # Regions where every call fails with this code (checked before anything else).
        self.region_down: dict[str, grpc.StatusCode] = {}
        # What a stockout reads: Vertex's documented sentence, or any other wording of infra/vertex/lifecycle/
        # outcome.py's table that a test feeds in ({region} is filled in).
        self.stockout_message: str = STOCKOUT_MESSAGE

    def capacity_of(self, region: str, job: aiplatform_v1.CustomJob) -> str | None:
        """STOCKOUT, QUEUED or None (room) for this job's shape in `region`."""
        shape = shape_of(job)
        return self.capacity.get((region, *shape), self.capacity.get(shape))

    def _reachable(self, resource: str) -> None:
        code = self.region_down.get(region_of(resource))
        if code is not None:
            raise Abort(code, f"injected {code.name} in {region_of(resource)}")

    # --- control -------------------------------------------------------------------------------------
    def handler(self) -> grpc.GenericRpcHandler:
        """This service's methods, to serve on a gRPC server (alone via `start`, or beside other fakes)."""
        return self._service(
            SERVICE,
            {
                "CreateCustomJob": (
                    self._create,
                    aiplatform_v1.CreateCustomJobRequest,
                    aiplatform_v1.CustomJob.serialize,
                ),
                "GetCustomJob": (
                    self._get,
                    aiplatform_v1.GetCustomJobRequest,
                    aiplatform_v1.CustomJob.serialize,
                ),
                "ListCustomJobs": (
                    self._list,
                    aiplatform_v1.ListCustomJobsRequest,
                    aiplatform_v1.ListCustomJobsResponse.serialize,
                ),
                "CancelCustomJob": (
                    self._cancel,
                    aiplatform_v1.CancelCustomJobRequest,
                    empty_pb2.Empty.SerializeToString,
                ),
                "DeleteCustomJob": (
                    self._delete,
                    aiplatform_v1.DeleteCustomJobRequest,
                    operations_pb2.Operation.SerializeToString,
                ),
            },
        )

    def add_job(
        self,
        parent: str,
        job: aiplatform_v1.CustomJob,
        state: JobState = JobState.JOB_STATE_RUNNING,
    ) -> str:
        """Seed a job as if someone else had created it; it stays in `state` until set_state or cancel."""
        with self._lock:
            stored = aiplatform_v1.CustomJob(job)
            stored.name = f"{parent}/customJobs/{next(self._ids)}"
            stored.create_time = _now()
            self.jobs[stored.name] = stored
            self._enter(stored, state)
            return stored.name

    def set_state(
        self, name: str, state: JobState, error_message: str | None = None, error_code: int = 13
    ) -> None:
        with self._lock:
            self._enter(self.jobs[name], state, error_message, error_code)

    # --- plumbing ------------------------------------------------------------------------------------
    def _enter(
        self,
        job: aiplatform_v1.CustomJob,
        state: JobState,
        error_message: str | None = None,
        error_code: int = 13,
    ) -> None:
        job.state = state
        job.update_time = _now()
        if state == JobState.JOB_STATE_RUNNING and not job.start_time:
            job.start_time = _now()
        if state in TERMINAL:
            job.end_time = _now()
        if error_message:
            job.error = status_pb2.Status(code=error_code, message=error_message)

    def _lookup(self, name: str) -> aiplatform_v1.CustomJob:
        if name not in self.jobs:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The CustomJob "{name}" does not exist.')
        return self.jobs[name]

    def _step(self, job: aiplatform_v1.CustomJob) -> None:
        """One state-machine step, taken when a client reads the job."""
        capacity = self.capacity_of(region_of(job.name), job) if job.name in self._advancing else None
        if job.state == JobState.JOB_STATE_CANCELLING:
            self._enter(job, JobState.JOB_STATE_CANCELLED)
        elif capacity == QUEUED and job.state == JobState.JOB_STATE_QUEUED:
            pass
        elif capacity == STOCKOUT and job.state == JobState.JOB_STATE_PENDING:
            region = region_of(job.name)
            self._enter(job, JobState.JOB_STATE_FAILED, self.stockout_message.format(region=region), 8)
        elif job.name in self._advancing and job.state in _NEXT:
            self._enter(job, _NEXT[job.state])
        elif job.name in self._advancing and job.state == JobState.JOB_STATE_RUNNING:
            outcome, error = self._job_outcomes.get(job.name, (self.outcome, self.outcome_error))
            failed = outcome == JobState.JOB_STATE_FAILED
            message = (error or "replica exited with code 1") if failed else None
            self._enter(job, outcome, message, self.outcome_error_code)

    # --- methods -------------------------------------------------------------------------------------
    def _create(self, request: aiplatform_v1.CreateCustomJobRequest) -> aiplatform_v1.CustomJob:
        self._reachable(request.parent)
        if not re.fullmatch(r"projects/[^/]+/locations/[^/]+", request.parent):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid parent: {request.parent}")
        if not request.custom_job.job_spec.worker_pool_specs:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "worker_pool_specs must not be empty")
        job = aiplatform_v1.CustomJob(request.custom_job)
        job.name = f"{request.parent}/customJobs/{next(self._ids)}"
        job.create_time = _now()
        self.jobs[job.name] = job
        self._enter(job, JobState.JOB_STATE_QUEUED)
        if self.outcomes:
            self._job_outcomes[job.name] = self.outcomes.pop(0)
        if self.auto_advance:
            self._advancing.add(job.name)
        return aiplatform_v1.CustomJob(job)

    def _get(self, request: aiplatform_v1.GetCustomJobRequest) -> aiplatform_v1.CustomJob:
        self._reachable(request.name)
        job = self._lookup(request.name)
        self._step(job)
        return aiplatform_v1.CustomJob(job)

    def _list(self, request: aiplatform_v1.ListCustomJobsRequest) -> aiplatform_v1.ListCustomJobsResponse:
        self._reachable(request.parent)
        matches = parse_filter(request.filter) if request.filter else (lambda _job: True)
        prefix = request.parent + "/customJobs/"
        found = [job for name, job in self.jobs.items() if name.startswith(prefix) and matches(job)]
        page, token = page_of(found, request.page_token, request.page_size, self.list_page_size)
        return aiplatform_v1.ListCustomJobsResponse(
            custom_jobs=[aiplatform_v1.CustomJob(job) for job in page], next_page_token=token
        )

    def _cancel(self, request: aiplatform_v1.CancelCustomJobRequest) -> empty_pb2.Empty:
        self._reachable(request.name)
        job = self._lookup(request.name)
        if job.state in TERMINAL or job.state == JobState.JOB_STATE_CANCELLING:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"Cannot cancel CustomJob {job.name} in state {job.state.name}.",
            )
        self._enter(job, JobState.JOB_STATE_CANCELLING)
        return empty_pb2.Empty()

    def _delete(self, request: aiplatform_v1.DeleteCustomJobRequest) -> operations_pb2.Operation:
        self._reachable(request.name)
        job = self._lookup(request.name)
        if job.state not in TERMINAL:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"CustomJob {job.name} is in state {job.state.name}; cancel it before deleting.",
            )
        del self.jobs[job.name]
        self._advancing.discard(job.name)
        response = any_pb2.Any()
        response.Pack(empty_pb2.Empty())
        return operations_pb2.Operation(name=f"{job.name}/operations/1", done=True, response=response)


# --- the filter subset Vertex's list methods accept: labels.k="v", state="X", display_name="x", = and != ---
_TOKENS = token_pattern(r"[A-Za-z_][\w.\-]*", ("=", "!="))


def parse_filter(text: str) -> Matcher:
    return filters.parse_filter(text, _TOKENS, _comparison)


def _comparison(field: str, op: str, value: str) -> Matcher:
    if field.startswith("labels."):
        key = field.removeprefix("labels.")
        return compare(lambda job: job.labels.get(key), op, value)
    if field == "state":
        return compare(lambda job: job.state.name, op, value)
    if field == "display_name":
        return compare(lambda job: job.display_name, op, value)
    raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter field {field!r}")
