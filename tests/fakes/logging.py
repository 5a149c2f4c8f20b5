"""A fake Cloud Logging `google.logging.v2.LoggingServiceV2` (ListLogEntries) served over real gRPC.

Built from google-cloud-logging's own proto-plus types, so the real `LoggingServiceV2Client` drives it through
`VERTEX_AI_EMULATOR_HOST` (serve it beside the fake JobService: `FakeJobService.start(fake_logs.handler())`).
It follows ListLogEntriesRequest's documentation: `resource_names` required; `order_by` "timestamp asc"
(default) or "timestamp desc", equal timestamps in insert_id order; `page_size` default 50, negative or over
1000 rejected; `next_page_token` when more may follow, valid only with identical other parameters. Filters:
the query-language subset this project sends -- `field OP value` with = != < <= > >= on resource.type,
resource.labels.KEY, labels.KEY (quoted keys too), logName, insertId and timestamp (compared as times),
combined with AND (or juxtaposition), OR, NOT and parentheses.
"""

from __future__ import annotations

import base64
import datetime
import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

import grpc
from google.api import monitored_resource_pb2
from google.cloud.logging_v2.types import ListLogEntriesRequest, ListLogEntriesResponse, LogEntry

SERVICE = "google.logging.v2.LoggingServiceV2"
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


class _Abort(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class _Fault:
    code: grpc.StatusCode
    message: str
    remaining: int


def parse_time(text: str) -> int:
    """RFC 3339 (Z or offset, up to 9 fractional digits) -> nanoseconds since the epoch."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)", text)
    if not m:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid timestamp {text!r}")
    zone = "+00:00" if m[3] == "Z" else m[3]
    whole = datetime.datetime.fromisoformat(m[1] + zone)
    return int(whole.timestamp()) * 10**9 + int((m[2] or "0").ljust(9, "0"))


def _entry_nanos(entry: LogEntry) -> int:
    return parse_time(entry.timestamp.rfc3339())


class FakeLoggingService:
    """Log entries per project; `calls` records every request; faults injected with `fail`."""

    def __init__(self) -> None:
        self.entries: dict[str, list[LogEntry]] = {}
        self.calls: list[ListLogEntriesRequest] = []
        self._faults: list[_Fault] = []
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    def handler(self) -> grpc.GenericRpcHandler:
        method = grpc.unary_unary_rpc_method_handler(
            self._behaviour,
            request_deserializer=ListLogEntriesRequest.deserialize,
            response_serializer=ListLogEntriesResponse.serialize,
        )
        return grpc.method_handlers_generic_handler(SERVICE, {"ListLogEntries": method})

    def add(
        self,
        project: str,
        job_id: str,
        text: str,
        *,
        task: str = "workerpool0-0",
        timestamp: datetime.datetime | None = None,
        insert_id: str | None = None,
        task_in_labels: bool = False,
    ) -> LogEntry:
        """A line a replica of Vertex job `job_id` wrote, as Vertex records it (resource type ml_job)."""
        resource_labels = {"job_id": job_id, "project_id": project}
        labels: dict[str, str] = {}
        if task_in_labels:
            labels["ml.googleapis.com/task_name"] = task
        else:
            resource_labels["task_name"] = task
        entry = LogEntry(
            log_name=f"projects/{project}/logs/workerpool0-0",
            resource=monitored_resource_pb2.MonitoredResource(type="ml_job", labels=resource_labels),
            text_payload=text,
            timestamp=timestamp or datetime.datetime.now(datetime.UTC),
            insert_id=insert_id or f"{next(self._ids):012d}",
            labels=labels,
        )
        with self._lock:
            self.entries.setdefault(project, []).append(entry)
        return entry

    def fail(self, code: grpc.StatusCode, times: int = 1, message: str = "") -> None:
        with self._lock:
            self._faults.append(_Fault(code, message or f"injected {code.name}", times))

    # --- plumbing ------------------------------------------------------------------------------------
    def _behaviour(
        self, request: ListLogEntriesRequest, context: grpc.ServicerContext
    ) -> ListLogEntriesResponse:
        with self._lock:
            self.calls.append(request)
            if self._faults:
                fault = self._faults[0]
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.pop(0)
                context.abort(fault.code, fault.message)
            try:
                return self._list(request)
            except _Abort as abort:
                context.abort(abort.code, abort.message)
        raise AssertionError("unreachable")

    def _list(self, request: ListLogEntriesRequest) -> ListLogEntriesResponse:
        if not request.resource_names:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "resource_names is required")
        if request.page_size < 0 or request.page_size > MAX_PAGE_SIZE:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid page_size {request.page_size}")
        order = request.order_by or "timestamp asc"
        if order not in ("timestamp asc", "timestamp desc"):
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid order_by {request.order_by!r}")
        matches = parse_filter(request.filter) if request.filter else (lambda _entry: True)
        found = []
        for name in request.resource_names:
            if not name.startswith("projects/"):
                raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported resource name {name!r}")
            found += [e for e in self.entries.get(name.removeprefix("projects/"), []) if matches(e)]
        found.sort(key=lambda e: (_entry_nanos(e), e.insert_id), reverse=order == "timestamp desc")
        query = [list(request.resource_names), request.filter, order, request.page_size]
        start = _read_token(request.page_token, query)
        size = request.page_size or DEFAULT_PAGE_SIZE
        page = found[start : start + size]
        token = _token(start + size, query) if start + size < len(found) else ""
        return ListLogEntriesResponse(entries=page, next_page_token=token)


def _token(offset: int, query: list[object]) -> str:
    return base64.urlsafe_b64encode(json.dumps([offset, query]).encode()).decode()


def _read_token(token: str, query: list[object]) -> int:
    if not token:
        return 0
    try:
        offset, sent = json.loads(base64.urlsafe_b64decode(token.encode()))
    except ValueError as exc:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "Invalid page_token") from exc
    if sent != query:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "page_token does not match the other parameters")
    return int(offset)


# --- the filter subset -----------------------------------------------------------------------------------
_TOKEN = re.compile(
    r'\s*(?:(?P<paren>[()])|(?P<word>AND|OR|NOT)\b|(?P<field>[A-Za-z_][\w]*(?:\.(?:"[^"]*"|[\w-]+))*)'
    r'\s*(?P<op>!=|>=|<=|=|>|<)\s*(?P<value>"[^"]*"|[^\s()]+))'
)
Matcher = Callable[[LogEntry], bool]
Tokens = list[tuple[str, ...]]


def parse_filter(text: str) -> Matcher:
    tokens: Tokens = []
    pos, text = 0, text.strip()
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


def _parse_or(tokens: Tokens) -> tuple[Matcher, Tokens]:
    left, tokens = _parse_and(tokens)
    while tokens and tokens[0] == ("word", "OR"):
        right, tokens = _parse_and(tokens[1:])
        left = (lambda a, b: lambda e: a(e) or b(e))(left, right)
    return left, tokens


def _parse_and(tokens: Tokens) -> tuple[Matcher, Tokens]:
    left, tokens = _parse_unary(tokens)
    while tokens and (
        tokens[0] in (("word", "AND"), ("word", "NOT"), ("paren", "(")) or tokens[0][0] == "cmp"
    ):
        if tokens[0] == ("word", "AND"):
            tokens = tokens[1:]
        right, tokens = _parse_unary(tokens)
        left = (lambda a, b: lambda e: a(e) and b(e))(left, right)
    return left, tokens


def _parse_unary(tokens: Tokens) -> tuple[Matcher, Tokens]:
    if not tokens:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "Filter ends unexpectedly")
    head = tokens[0]
    if head == ("word", "NOT"):
        inner, rest = _parse_unary(tokens[1:])
        return (lambda e: not inner(e)), rest
    if head == ("paren", "("):
        inner, rest = _parse_or(tokens[1:])
        if not rest or rest[0] != ("paren", ")"):
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "Unbalanced parentheses in filter")
        return inner, rest[1:]
    if head[0] != "cmp":
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unexpected {head[1]} in filter")
    _, field, op, value = head
    return _comparison(field, op, value), tokens[1:]


_OPS: dict[str, Callable[[object, object], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a is not None and a < b,  # type: ignore[operator]
    "<=": lambda a, b: a is not None and a <= b,  # type: ignore[operator]
    ">": lambda a, b: a is not None and a > b,  # type: ignore[operator]
    ">=": lambda a, b: a is not None and a >= b,  # type: ignore[operator]
}


def _comparison(field: str, op: str, value: str) -> Matcher:
    compare = _OPS[op]
    if field == "timestamp":
        bound = parse_time(value)
        return lambda e: compare(_entry_nanos(e), bound)
    readers: dict[str, Callable[[LogEntry], str | None]] = {
        "resource.type": lambda e: e.resource.type,
        "insertId": lambda e: e.insert_id,
        "logName": lambda e: e.log_name,
    }
    if field in readers:
        read = readers[field]
    elif field.startswith("resource.labels."):
        key = field.removeprefix("resource.labels.").strip('"')
        read = lambda e: e.resource.labels.get(key)  # noqa: E731
    elif field.startswith("labels."):
        key = field.removeprefix("labels.").strip('"')
        read = lambda e: e.labels.get(key)  # noqa: E731
    else:
        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter field {field!r}")
    return lambda e: compare(read(e), value)
