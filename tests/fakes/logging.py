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
from collections.abc import Callable

import grpc
from google.api import monitored_resource_pb2
from google.cloud.logging_v2.types import ListLogEntriesRequest, ListLogEntriesResponse, LogEntry

from tests.fakes import filters
from tests.fakes.filters import Matcher, compare, token_pattern
from tests.fakes.grpc_fake import Abort, FakeService

SERVICE = "google.logging.v2.LoggingServiceV2"
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


def parse_time(text: str) -> int:
    """RFC 3339 (Z or offset, up to 9 fractional digits) -> nanoseconds since the epoch."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)", text)
    if not m:
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid timestamp {text!r}")
    zone = "+00:00" if m[3] == "Z" else m[3]
    whole = datetime.datetime.fromisoformat(m[1] + zone)
    return int(whole.timestamp()) * 10**9 + int((m[2] or "0").ljust(9, "0"))


def _entry_nanos(entry: LogEntry) -> int:
    return parse_time(entry.timestamp.rfc3339())


class FakeLoggingService(FakeService):
    """Log entries per project; `calls` records every (method, request); faults injected with `fail`."""

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[str, list[LogEntry]] = {}
        self._ids = itertools.count(1)

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE, {"ListLogEntries": (self._list, ListLogEntriesRequest, ListLogEntriesResponse.serialize)}
        )

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
            insert_id=insert_id or "",
            labels=labels,
        )
        return self.write(project, entry)

    def write(self, project: str, entry: LogEntry) -> LogEntry:
        """Record `entry` (any resource) in `project`; stamped now and given an insertId where it has none."""
        if "timestamp" not in entry:
            entry.timestamp = datetime.datetime.now(datetime.UTC)
        with self._lock:
            entry.insert_id = entry.insert_id or f"{next(self._ids):012d}"
            self.entries.setdefault(project, []).append(entry)
        return entry

    def _list(self, request: ListLogEntriesRequest) -> ListLogEntriesResponse:
        if not request.resource_names:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "resource_names is required")
        if request.page_size < 0 or request.page_size > MAX_PAGE_SIZE:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid page_size {request.page_size}")
        order = request.order_by or "timestamp asc"
        if order not in ("timestamp asc", "timestamp desc"):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid order_by {request.order_by!r}")
        matches = parse_filter(request.filter) if request.filter else (lambda _entry: True)
        found = []
        for name in request.resource_names:
            if not name.startswith("projects/"):
                raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported resource name {name!r}")
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
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "Invalid page_token") from exc
    if sent != query:
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "page_token does not match the other parameters")
    return int(offset)


# --- the filter subset: = != < <= > >= on resource.type, resource.labels.KEY, labels.KEY, logName, insertId
# and timestamp ----------------------------------------------------------------------------------------------
_TOKENS = token_pattern(r'[A-Za-z_][\w]*(?:\.(?:"[^"]*"|[\w-]+))*', ("!=", ">=", "<=", "=", ">", "<"))
_READERS: dict[str, Callable[[LogEntry], str | None]] = {
    "resource.type": lambda e: e.resource.type,
    "insertId": lambda e: e.insert_id,
    "logName": lambda e: e.log_name,
}


def parse_filter(text: str) -> Matcher:
    return filters.parse_filter(text, _TOKENS, _comparison)


def _comparison(field: str, op: str, value: str) -> Matcher:
    if field == "timestamp":
        return compare(_entry_nanos, op, parse_time(value))
    if field in _READERS:
        return compare(_READERS[field], op, value)
    if field.startswith("resource.labels."):
        key = field.removeprefix("resource.labels.").strip('"')
        return compare(lambda e: e.resource.labels.get(key), op, value)
    if field.startswith("labels."):
        key = field.removeprefix("labels.").strip('"')
        return compare(lambda e: e.labels.get(key), op, value)
    raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter field {field!r}")
