"""A fake Vertex AI JobService (CustomJob and BatchPredictionJob methods) served over real gRPC on localhost.

Every job kind is one row of KINDS (its collection, message, shape and request checks); the methods
(Create, Get, List, Cancel, Delete) are written once for all of them.

Requests and responses are the library's own proto-plus types, so the real `JobServiceClient` drives it
through `VERTEX_AI_EMULATOR_HOST`. Jobs move QUEUED -> PENDING -> RUNNING -> `outcome` one step per Get
(jobs made by `add_job` stay put until `set_state`); faults are injected per method with `fail`.

Jobs live under their parent `projects/P/locations/R`, per region as Vertex keeps them (a list sees its own
region only). Capacity per shape (the chief's machine type, accelerator type and scheduling strategy), in
every region, or per region and shape (a key that starts with the region wins), as Vertex's docs describe a
region without it: STOCKOUT fails the job before it runs, after Vertex's own retries, with the
documented message ("Resources are insufficient in region: R. Try a different region or use a different
accelerator.", google.rpc code 8); QUEUED keeps it waiting (a Dynamic Workload Scheduler job waiting for
machines, or a queue for quota) until it is cancelled or the capacity changes; NOT_OFFERED refuses the
create (a GPU the region does not offer); WAIT_EXPIRED and WAIT_FAILED end a queued job without it ever
starting (a Dynamic Workload Scheduler wait that ran out). `region_down[R]` makes every
call on region R fail with that code (an outage, a permission missing there, an RPC it does not answer).
"""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
# The region does not offer the shape's GPU: CreateCustomJob answers 400 INVALID_ARGUMENT with Vertex's
# wording (infra/vertex/lifecycle/error_classes.py, NOT_OFFERED, and its sources); no job is made.
NOT_OFFERED = "not offered"
# A Dynamic Workload Scheduler job whose max wait ran out before machines came: it ends without ever starting,
# EXPIRED (no error), or FAILED with `wait_failed_message`. How Vertex ends such a wait is not documented
# (infra/vertex/lifecycle/waiting.py says what was read), so the fake sends both.
WAIT_EXPIRED = "wait expired"
WAIT_FAILED = "wait failed"
STOCKOUT_MESSAGE = (
    "Resources are insufficient in region: {region}. Try a different region or use a different accelerator."
)
NOT_OFFERED_MESSAGE = 'Accelerator "{accelerator}" is not supported for machine type "{machine}"'


def shape_of(job: Any) -> tuple[str, str, str]:
    """(machine type, accelerator type, strategy) of the job's chief (a CustomJob) or machine (a batch
    prediction, STANDARD: it has no strategy): the key of `FakeJobService.capacity`."""
    if isinstance(job, aiplatform_v1.BatchPredictionJob):
        machine, strategy = job.dedicated_resources.machine_spec, "STANDARD"
    else:
        machine, strategy = (
            job.job_spec.worker_pool_specs[0].machine_spec,
            job.job_spec.scheduling.strategy.name,
        )
    accelerator = machine.accelerator_type.name if machine.accelerator_count else ""
    return machine.machine_type, accelerator, strategy


def _custom_job_problem(job: aiplatform_v1.CustomJob) -> str | None:
    return None if job.job_spec.worker_pool_specs else "worker_pool_specs must not be empty"


def _batch_problem(job: aiplatform_v1.BatchPredictionJob) -> str | None:
    """The REQUIRED fields and the one-of rule of aiplatform_v1 BatchPredictionJob (its proto's
    display_name, input_config and its instances_format, output_config; exactly one of model and
    unmanaged_container_model; BatchDedicatedResources.machine_spec Required)."""
    resources = job.dedicated_resources
    if not job.display_name:
        return "display_name is required"
    if not job.input_config.instances_format or not job.input_config.gcs_source.uris:
        return "input_config.instances_format and a source are required"
    if not job.output_config.predictions_format or not job.output_config.gcs_destination.output_uri_prefix:
        return "output_config is required"
    if bool(job.model) == ("unmanaged_container_model" in job):
        return "Exactly one of model and unmanaged_container_model must be set"
    if not resources.machine_spec.machine_type:
        return "dedicated_resources.machine_spec is required"
    if resources.starting_replica_count > (resources.max_replica_count or 10):
        return "starting_replica_count must not exceed max_replica_count"
    return _instance_config_problem(job)


# InstanceConfig (batch_prediction_job.proto, read 2026-11-27): key_field needs input that is "JSONL with
# objects at each line, CSV, BigQuery or TfRecord"; included/excluded_fields "JSONL with objects at each
# line, BigQuery or TfRecord" and not both; instance_type `object`/`array` "Does not apply to `csv`,
# `file-list`, `tf-record`, or `tf-record-gzip`".
_KEYED_FORMATS = {"jsonl", "csv", "bigquery", "tf-record", "tf-record-gzip"}
_FIELD_FORMATS = {"jsonl", "bigquery", "tf-record", "tf-record-gzip"}
_TYPED_FORMATS = {"jsonl", "bigquery"}


def _instance_config_problem(job: aiplatform_v1.BatchPredictionJob) -> str | None:
    config, fmt = job.instance_config, job.input_config.instances_format
    if config.key_field and fmt not in _KEYED_FORMATS:
        return f"instance_config.key_field is not supported for instances_format {fmt}"
    if (config.included_fields or config.excluded_fields) and fmt not in _FIELD_FORMATS:
        return f"instance_config.included_fields/excluded_fields are not supported for instances_format {fmt}"
    if config.included_fields and config.excluded_fields:
        return "only one of instance_config.included_fields and excluded_fields may be set"
    if config.instance_type and (
        config.instance_type not in ("object", "array") or fmt not in _TYPED_FORMATS
    ):
        return f"instance_config.instance_type {config.instance_type!r} does not apply to {fmt}"
    return None


def _batch_output(job: aiplatform_v1.BatchPredictionJob, fake: FakeJobService) -> None:
    """What a succeeded batch prediction reports: its prediction directory (OutputInfo, named as
    OutputConfig.gcs_destination documents) and its completion stats."""
    stamp = job.create_time.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    prefix = job.output_config.gcs_destination.output_uri_prefix.rstrip("/")
    job.output_info = aiplatform_v1.BatchPredictionJob.OutputInfo(
        gcs_output_directory=f"{prefix}/prediction-{job.display_name}-{stamp}"
    )
    job.completion_stats = aiplatform_v1.CompletionStats(
        successful_count=fake.batch_successful, failed_count=fake.batch_failed, incomplete_count=0
    )
    if fake.batch_writes is not None:  # what the job wrote there (a test's fake Cloud Storage)
        fake.batch_writes(job.output_info.gcs_output_directory)


@dataclass(frozen=True)
class Kind:
    """One job kind of the JobService: `name` (CustomJob) makes its method and request names."""

    name: str
    collection: str  # resource names: {parent}/{collection}/{id}
    message: type
    field: str  # the create request's and list response's field stem: custom_job(s)
    problem: Callable[[Any], str | None]  # why Create refuses the job (INVALID_ARGUMENT), or None
    succeeded: Callable[[Any, FakeJobService], None] = lambda _job, _fake: None  # outputs at success


KINDS = (
    Kind("CustomJob", "customJobs", aiplatform_v1.CustomJob, "custom_job", _custom_job_problem),
    Kind(
        "BatchPredictionJob",
        "batchPredictionJobs",
        aiplatform_v1.BatchPredictionJob,
        "batch_prediction_job",
        _batch_problem,
        _batch_output,
    ),
)


def kind_of(name: str) -> Kind:
    collection = name.split("/")[4] if len(name.split("/")) > 4 else ""
    return next((k for k in KINDS if k.collection == collection), KINDS[0])


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
        # error_classes.py's table that a test feeds in ({region} is filled in).
        self.stockout_message: str = STOCKOUT_MESSAGE
        # What a WAIT_FAILED job's error reads: no Google source gives it, so by default a text no row of
        # error_classes.py's table holds (the state and the missing start time must decide, not the words).
        self.wait_failed_message: str = "Job failed."
        # The completion stats a succeeded batch prediction reports.
        self.batch_successful: int = 3
        self.batch_failed: int = 0
        # Called with a succeeded batch prediction's output directory: a test writes its files there.
        self.batch_writes: Callable[[str], None] | None = None

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
        methods = {}
        for kind in KINDS:

            def request(verb: str, k: Kind = kind) -> type:
                return getattr(aiplatform_v1, f"{verb}{k.name}{'s' if verb == 'List' else ''}Request")

            listed = getattr(aiplatform_v1, f"List{kind.name}sResponse")
            methods.update(
                {
                    f"Create{kind.name}": (self._create, request("Create"), kind.message.serialize),
                    f"Get{kind.name}": (self._get, request("Get"), kind.message.serialize),
                    f"List{kind.name}s": (self._list, request("List"), listed.serialize),
                    f"Cancel{kind.name}": (
                        self._cancel,
                        request("Cancel"),
                        empty_pb2.Empty.SerializeToString,
                    ),
                    f"Delete{kind.name}": (
                        self._delete,
                        request("Delete"),
                        operations_pb2.Operation.SerializeToString,
                    ),
                }
            )
        return self._service(SERVICE, methods)

    def add_job(self, parent: str, job: Any, state: JobState = JobState.JOB_STATE_RUNNING) -> str:
        """Seed a job of any kind as if someone else had created it; it stays in `state` until set_state or
        cancel."""
        with self._lock:
            kind = next(k for k in KINDS if isinstance(job, k.message))
            stored = kind.message(job)
            stored.name = f"{parent}/{kind.collection}/{next(self._ids)}"
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
        job: Any,
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
        if state == JobState.JOB_STATE_SUCCEEDED:
            kind_of(job.name).succeeded(job, self)
        if error_message:
            job.error = status_pb2.Status(code=error_code, message=error_message)

    def _lookup(self, name: str) -> Any:
        if name not in self.jobs:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The {kind_of(name).name} "{name}" does not exist.')
        return self.jobs[name]

    def _step(self, job: Any) -> None:
        """One state-machine step, taken when a client reads the job."""
        capacity = self.capacity_of(region_of(job.name), job) if job.name in self._advancing else None
        if job.state == JobState.JOB_STATE_CANCELLING:
            self._enter(job, JobState.JOB_STATE_CANCELLED)
        elif capacity == QUEUED and job.state == JobState.JOB_STATE_QUEUED:
            pass
        elif capacity == WAIT_EXPIRED and job.state == JobState.JOB_STATE_QUEUED:
            self._enter(job, JobState.JOB_STATE_EXPIRED)
        elif capacity == WAIT_FAILED and job.state == JobState.JOB_STATE_QUEUED:
            self._enter(job, JobState.JOB_STATE_FAILED, self.wait_failed_message, 9)
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

    # --- methods (every kind) -------------------------------------------------------------------------
    def _create(self, request: Any) -> Any:
        self._reachable(request.parent)
        kind = next(k for k in KINDS if isinstance(request, getattr(aiplatform_v1, f"Create{k.name}Request")))
        if not re.fullmatch(r"projects/[^/]+/locations/[^/]+", request.parent):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid parent: {request.parent}")
        job = kind.message(getattr(request, kind.field))
        problem = kind.problem(job)
        if problem:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        if self.capacity_of(region_of(request.parent), job) == NOT_OFFERED:
            machine, accelerator, _strategy = shape_of(job)
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                NOT_OFFERED_MESSAGE.format(accelerator=accelerator, machine=machine),
            )
        job.name = f"{request.parent}/{kind.collection}/{next(self._ids)}"
        job.create_time = _now()
        self.jobs[job.name] = job
        self._enter(job, JobState.JOB_STATE_QUEUED)
        if self.outcomes:
            self._job_outcomes[job.name] = self.outcomes.pop(0)
        if self.auto_advance:
            self._advancing.add(job.name)
        return kind.message(job)

    def _get(self, request: Any) -> Any:
        self._reachable(request.name)
        job = self._lookup(request.name)
        self._step(job)
        return kind_of(job.name).message(job)

    def _list(self, request: Any) -> Any:
        self._reachable(request.parent)
        kind = next(k for k in KINDS if isinstance(request, getattr(aiplatform_v1, f"List{k.name}sRequest")))
        matches = parse_filter(request.filter) if request.filter else (lambda _job: True)
        prefix = f"{request.parent}/{kind.collection}/"
        found = [job for name, job in self.jobs.items() if name.startswith(prefix) and matches(job)]
        page, token = page_of(found, request.page_token, request.page_size, self.list_page_size)
        response = getattr(aiplatform_v1, f"List{kind.name}sResponse")
        return response(**{f"{kind.field}s": [kind.message(job) for job in page]}, next_page_token=token)

    def _cancel(self, request: Any) -> empty_pb2.Empty:
        self._reachable(request.name)
        job = self._lookup(request.name)
        if job.state in TERMINAL or job.state == JobState.JOB_STATE_CANCELLING:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"Cannot cancel {kind_of(job.name).name} {job.name} in state {job.state.name}.",
            )
        self._enter(job, JobState.JOB_STATE_CANCELLING)
        return empty_pb2.Empty()

    def _delete(self, request: Any) -> operations_pb2.Operation:
        self._reachable(request.name)
        job = self._lookup(request.name)
        if job.state not in TERMINAL:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{kind_of(job.name).name} {job.name} is in state {job.state.name}; cancel it before "
                "deleting.",
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
