"""A fake Vertex AI JobService (CustomJob methods) served over real gRPC on localhost.

Requests and responses are the library's own proto-plus types, so the real `JobServiceClient` drives it
through `VERTEX_AI_EMULATOR_HOST`. Jobs move QUEUED -> PENDING -> RUNNING -> `outcome` one step per Get
(jobs made by `add_job` stay put until `set_state`); faults are injected per method with `fail`.
"""

from __future__ import annotations

import datetime
import itertools
import re
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

import grpc
from google.cloud import aiplatform_v1
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2
from google.rpc import status_pb2

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


class _Abort(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class _Fault:
    code: grpc.StatusCode
    message: str
    remaining: int
    applied: bool


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class FakeJobService:
    """In-memory CustomJob store behind a gRPC server; every attribute is safe to read from tests."""

    def __init__(self) -> None:
        self.jobs: dict[str, aiplatform_v1.CustomJob] = {}
        self.calls: list[tuple[str, object]] = []
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
        self._faults: dict[str, list[_Fault]] = {}
        self._delays: dict[str, list[float]] = {}
        self._ids = itertools.count(1000)
        self._lock = threading.RLock()
        self._server: grpc.Server | None = None

    # --- control -------------------------------------------------------------------------------------
    def handler(self) -> grpc.GenericRpcHandler:
        """This service's methods, to serve on a gRPC server (alone via `start`, or beside other fakes)."""
        handlers: dict[str, grpc.RpcMethodHandler] = {
            "CreateCustomJob": self._handler(
                self._create, aiplatform_v1.CreateCustomJobRequest, aiplatform_v1.CustomJob.serialize
            ),
            "GetCustomJob": self._handler(
                self._get, aiplatform_v1.GetCustomJobRequest, aiplatform_v1.CustomJob.serialize
            ),
            "ListCustomJobs": self._handler(
                self._list,
                aiplatform_v1.ListCustomJobsRequest,
                aiplatform_v1.ListCustomJobsResponse.serialize,
            ),
            "CancelCustomJob": self._handler(
                self._cancel, aiplatform_v1.CancelCustomJobRequest, empty_pb2.Empty.SerializeToString
            ),
            "DeleteCustomJob": self._handler(
                self._delete, aiplatform_v1.DeleteCustomJobRequest, operations_pb2.Operation.SerializeToString
            ),
        }
        return grpc.method_handlers_generic_handler(SERVICE, handlers)

    def start(self, *others: grpc.GenericRpcHandler) -> str:
        """Serve this service (and `others`, other fakes' handlers) on a localhost port; returns host:port."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers((self.handler(), *others))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._server = server
        return f"127.0.0.1:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None

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

    def fail(
        self,
        method: str,
        code: grpc.StatusCode,
        times: int = 1,
        message: str = "",
        *,
        applied: bool = False,
    ) -> None:
        """Make the next `times` calls of `method` fail with `code`.

        applied=True: the call takes effect before the error is returned (a response lost on the way back).
        """
        with self._lock:
            self._faults.setdefault(method, []).append(
                _Fault(code, message or f"injected {code.name}", times, applied)
            )

    def slow(self, method: str, seconds: float, times: int = 1) -> None:
        """Make the next `times` calls of `method` answer only after `seconds` (a hung connection)."""
        with self._lock:
            self._delays.setdefault(method, []).extend([seconds] * times)

    def methods(self) -> list[str]:
        """Names of the methods called so far, in order."""
        return [name for name, _ in self.calls]

    # --- plumbing ------------------------------------------------------------------------------------
    def _handler(
        self,
        fn: Callable[[object], object],
        request_type: type,
        serialize: Callable[[object], bytes],
    ) -> grpc.RpcMethodHandler:
        method = fn.__name__.lstrip("_").title() + "CustomJob"
        method = {"ListCustomJob": "ListCustomJobs"}.get(method, method)

        def behaviour(request: object, context: grpc.ServicerContext) -> object:
            with self._lock:
                delays = self._delays.get(method) or []
                delay = delays.pop(0) if delays else 0.0
            time.sleep(delay)  # outside the lock: other calls go on meanwhile
            with self._lock:
                self.calls.append((method, request))
                fault = self._take_fault(method)
                if fault is not None and not fault.applied:
                    context.abort(fault.code, fault.message)
                try:
                    response = fn(request)
                except _Abort as abort:
                    context.abort(abort.code, abort.message)
                if fault is not None:
                    context.abort(fault.code, fault.message)
                return response

        return grpc.unary_unary_rpc_method_handler(
            behaviour, request_deserializer=request_type.deserialize, response_serializer=serialize
        )

    def _take_fault(self, method: str) -> _Fault | None:
        queue = self._faults.get(method) or []
        if not queue:
            return None
        fault = queue[0]
        fault.remaining -= 1
        if fault.remaining <= 0:
            queue.pop(0)
        return fault

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
            raise _Abort(grpc.StatusCode.NOT_FOUND, f'The CustomJob "{name}" does not exist.')
        return self.jobs[name]

    def _step(self, job: aiplatform_v1.CustomJob) -> None:
        """One state-machine step, taken when a client reads the job."""
        if job.state == JobState.JOB_STATE_CANCELLING:
            self._enter(job, JobState.JOB_STATE_CANCELLED)
        elif job.name in self._advancing and job.state in _NEXT:
            self._enter(job, _NEXT[job.state])
        elif job.name in self._advancing and job.state == JobState.JOB_STATE_RUNNING:
            outcome, error = self._job_outcomes.get(job.name, (self.outcome, self.outcome_error))
            failed = outcome == JobState.JOB_STATE_FAILED
            message = (error or "replica exited with code 1") if failed else None
            self._enter(job, outcome, message, self.outcome_error_code)

    # --- methods -------------------------------------------------------------------------------------
    def _create(self, request: aiplatform_v1.CreateCustomJobRequest) -> aiplatform_v1.CustomJob:
        if not re.fullmatch(r"projects/[^/]+/locations/[^/]+", request.parent):
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid parent: {request.parent}")
        if not request.custom_job.job_spec.worker_pool_specs:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "worker_pool_specs must not be empty")
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
        job = self._lookup(request.name)
        self._step(job)
        return aiplatform_v1.CustomJob(job)

    def _list(self, request: aiplatform_v1.ListCustomJobsRequest) -> aiplatform_v1.ListCustomJobsResponse:
        matches = parse_filter(request.filter) if request.filter else (lambda _job: True)
        prefix = request.parent + "/customJobs/"
        found = [job for name, job in self.jobs.items() if name.startswith(prefix) and matches(job)]
        start = int(request.page_token or 0)
        size = request.page_size or 100
        page = found[start : start + size]
        token = str(start + size) if start + size < len(found) else ""
        return aiplatform_v1.ListCustomJobsResponse(
            custom_jobs=[aiplatform_v1.CustomJob(job) for job in page], next_page_token=token
        )

    def _cancel(self, request: aiplatform_v1.CancelCustomJobRequest) -> empty_pb2.Empty:
        job = self._lookup(request.name)
        if job.state in TERMINAL or job.state == JobState.JOB_STATE_CANCELLING:
            raise _Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"Cannot cancel CustomJob {job.name} in state {job.state.name}.",
            )
        self._enter(job, JobState.JOB_STATE_CANCELLING)
        return empty_pb2.Empty()

    def _delete(self, request: aiplatform_v1.DeleteCustomJobRequest) -> operations_pb2.Operation:
        job = self._lookup(request.name)
        if job.state not in TERMINAL:
            raise _Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"CustomJob {job.name} is in state {job.state.name}; cancel it before deleting.",
            )
        del self.jobs[job.name]
        self._advancing.discard(job.name)
        response = any_pb2.Any()
        response.Pack(empty_pb2.Empty())
        return operations_pb2.Operation(name=f"{job.name}/operations/1", done=True, response=response)


# --- the filter subset Vertex's list methods accept: labels.k="v", state="X", display_name="x", with
# = and !=, AND / OR / NOT and parentheses ----------------------------------------------------------------
_TOKEN = re.compile(
    r"\s*(?:(?P<paren>[()])|(?P<word>AND|OR|NOT)\b|"
    r'(?P<field>[A-Za-z_][\w.\-]*)\s*(?P<op>!=|=)\s*(?P<value>"[^"]*"|[^\s()]+))'
)


def parse_filter(text: str) -> Callable[[aiplatform_v1.CustomJob], bool]:
    tokens: list[tuple[str, ...]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter near {text[pos:]!r}")
        pos = m.end()
        if m["paren"]:
            tokens.append(("paren", m["paren"]))
        elif m["word"]:
            tokens.append(("word", m["word"]))
        else:
            tokens.append(("cmp", m["field"], m["op"], m["value"].strip('"')))
        while pos < len(text) and text[pos].isspace():
            pos += 1
    matcher, rest = _parse_or(tokens)
    if rest:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unexpected {rest[0]} in filter {text!r}")
    return matcher


Tokens = list[tuple[str, ...]]
Matcher = Callable[[aiplatform_v1.CustomJob], bool]


def _parse_or(tokens: Tokens) -> tuple[Matcher, Tokens]:
    left, tokens = _parse_and(tokens)
    while tokens and tokens[0] == ("word", "OR"):
        right, tokens = _parse_and(tokens[1:])
        left = (lambda a, b: lambda job: a(job) or b(job))(left, right)
    return left, tokens


def _parse_and(tokens: Tokens) -> tuple[Matcher, Tokens]:
    left, tokens = _parse_unary(tokens)
    while tokens and (
        tokens[0] == ("word", "AND") or (tokens[0][0] in ("cmp", "paren") and tokens[0][1] != ")")
    ):
        if tokens[0] == ("word", "AND"):
            tokens = tokens[1:]
        right, tokens = _parse_unary(tokens)
        left = (lambda a, b: lambda job: a(job) and b(job))(left, right)
    return left, tokens


def _parse_unary(tokens: Tokens) -> tuple[Matcher, Tokens]:
    if not tokens:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "Filter ends unexpectedly")
    head = tokens[0]
    if head == ("word", "NOT"):
        inner, rest = _parse_unary(tokens[1:])
        return (lambda job: not inner(job)), rest
    if head == ("paren", "("):
        inner, rest = _parse_or(tokens[1:])
        if not rest or rest[0] != ("paren", ")"):
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "Unbalanced parentheses in filter")
        return inner, rest[1:]
    if head[0] != "cmp":
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unexpected {head[1]} in filter")
    _, field, op, value = head
    return _comparison(field, op, value), tokens[1:]


def _comparison(field: str, op: str, value: str) -> Matcher:
    if field.startswith("labels."):
        key = field.removeprefix("labels.")

        def read(job: aiplatform_v1.CustomJob) -> str | None:
            return job.labels.get(key)
    elif field == "state":

        def read(job: aiplatform_v1.CustomJob) -> str | None:
            return job.state.name
    elif field == "display_name":

        def read(job: aiplatform_v1.CustomJob) -> str | None:
            return job.display_name
    else:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter field {field!r}")
    if op == "=":
        return lambda job: read(job) == value
    return lambda job: read(job) != value
