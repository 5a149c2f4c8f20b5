"""A Vertex job's own log lines from Cloud Logging, read incrementally (none twice, in order) as gcloud's
`ai-platform jobs stream-logs` does (google-cloud-sdk, lib/googlecloudsdk/command_lib/logs/stream.py)."""

from __future__ import annotations

import datetime
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from google.api_core import exceptions as gexc
from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
from google.cloud.logging_v2.services.logging_service_v2.transports import LoggingServiceV2GrpcTransport
from google.cloud.logging_v2.types import ListLogEntriesRequest, LogEntry
from google.protobuf import json_format

from infra.dynamic.endpoints import client_kwargs
from infra.vertex.capacity.placement import POOL_ROLES

LOGGING_ENDPOINT = "logging.googleapis.com"
# Entries younger than this are left for the next poll: Logging may still be indexing older ones ("it may take
# several seconds for a new log message to become visible", stream.py: LogPosition, ApiAccessor.GetLogs).
SETTLE_SECONDS = 10.0
# One call per poll reads at most this many entries (the API's maximum); the rest come with the next poll.
PAGE_SIZE = 1000
CALL_TIMEOUT_SECONDS = 30.0
# After the job ends the rest is read page after page, up to this many calls.
FINAL_PAGES = 10
# The replica's name (`workerpool0-0` etc.) when the entry's `resource.labels.task_name` is missing (gcloud's
# command_lib/ml_engine/log_utils.py `_GetLabelAttributes` reads both).
TASK_LABEL = "ml.googleapis.com/task_name"
# TensorFlow's C++ start-up lines that absl prints before it reads any setting: seen here with TF 2.21,
# neither TF_CPP_MIN_LOG_LEVEL nor ABSL_MIN_LOG_LEVEL nor GLOG_minloglevel quiets them. Info level only:
# C++ warnings and errors still show.
_STARTUP_NOISE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|I\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] .*"
)


class JobLog(Protocol):
    def read(self, final: bool = False) -> list[str]:
        """New lines since the last read, prefixed with their replica; `final`: the job ended, read all."""
        ...


def replica_name(task: str) -> str:
    """`workerpool1-2` (Vertex's and the local runner's task name) -> `worker-2`; anything else as it is."""
    pool, _, index = task.removeprefix("workerpool").partition("-")
    if pool.isdigit() and int(pool) < len(POOL_ROLES) and index.isdigit():
        return f"{POOL_ROLES[int(pool)]}-{index}"
    return task or "job"


def prefixed(replica: str, text: str) -> list[str]:
    """`text`'s lines as `replica| line`, without TensorFlow's C++ start-up noise."""
    lines = text.rstrip("\n").splitlines() or [""]
    return [f"{replica}| {line}" for line in lines if not _STARTUP_NOISE.fullmatch(line)]


def entry_text(entry: LogEntry) -> str:
    if entry.text_payload:
        return entry.text_payload
    # MessageToDict turns nested Struct values into plain JSON (dict() would leave proto-plus wrappers).
    payload = json_format.MessageToDict(LogEntry.pb(entry).json_payload)
    if "message" in payload:
        return str(payload["message"])
    return json.dumps(payload, default=str) if payload else ""


def rfc3339(value: datetime.datetime) -> str:
    """Nanosecond RFC 3339 when the value carries them (proto timestamps do), else microseconds."""
    rfc = getattr(value, "rfc3339", None)
    if rfc is not None:
        return str(rfc())
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# Cloud Logging returns `timestamp asc` entries with equal timestamps "in order of their insert_id values"
# (ListLogEntriesRequest.order_by), so the position never repeats one; an entry that becomes visible only
# after a later one was printed (more than the settle time late) is not shown.
@dataclass
class LogPosition:
    """The last entry printed: (timestamp, insertId); the next read starts strictly after it."""

    timestamp: str
    insert_id: str = ""

    def lower_bound(self) -> str:
        if not self.insert_id:
            return f'timestamp>="{self.timestamp}"'
        at = self.timestamp
        return f'((timestamp="{at}" AND insertId>"{self.insert_id}") OR timestamp>"{at}")'


def log_filter(job_id: str, position: LogPosition, upper: str | None) -> str:
    parts = ['resource.type="ml_job"', f'resource.labels.job_id="{job_id}"', position.lower_bound()]
    if upper:
        parts.append(f'timestamp<"{upper}"')
    return " AND ".join(parts)


@dataclass
class CloudJobLog:
    """One Vertex job's log in Cloud Logging; at most one ListLogEntries call per `read`."""

    project: str
    job_name: str
    since: str  # the job's create time (RFC 3339): nothing of this job is older
    warn: Callable[[str], None]
    clock: Callable[[], float] = time.time
    position: LogPosition = field(init=False)
    calls: int = field(default=0, init=False)
    _client: LoggingServiceV2Client | None = field(default=None, init=False)
    _disabled: bool = field(default=False, init=False)
    _warned: bool = field(default=False, init=False)
    _failing: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.position = LogPosition(self.since)

    @property
    def client(self) -> LoggingServiceV2Client:
        if self._client is None:
            self._client = LoggingServiceV2Client(
                **client_kwargs(LoggingServiceV2GrpcTransport, LOGGING_ENDPOINT)
            )
        return self._client

    def read(self, final: bool = False) -> list[str]:
        if not final:
            return self._read_page(final=False)[0]
        if not self._disabled and not self._failing:
            time.sleep(SETTLE_SECONDS)  # the job's last lines need the same time to become visible
        lines: list[str] = []
        for _ in range(FINAL_PAGES):
            page, full = self._read_page(final=True)
            lines += page
            if not full:
                return lines
        # Say so rather than end silently: the rest (often a failed job's traceback) is in the console.
        self.warn(
            f"live log: more than {FINAL_PAGES * PAGE_SIZE} entries were left at the end; the rest are not "
            "shown here (see the job's logs in the console)"
        )
        return lines

    def _read_page(self, final: bool) -> tuple[list[str], bool]:
        """One call: the lines it brought, and whether the page was full (more may wait)."""
        if self._disabled:
            return [], False
        upper = None
        if not final:
            upper = rfc3339(datetime.datetime.fromtimestamp(self.clock() - SETTLE_SECONDS, datetime.UTC))
        request = ListLogEntriesRequest(
            resource_names=[f"projects/{self.project}"],
            filter=log_filter(self.job_name.rsplit("/", 1)[-1], self.position, upper),
            order_by="timestamp asc",
            page_size=PAGE_SIZE,
        )
        self.calls += 1
        try:
            # The pager holds the first page only; further pages would be further calls (next poll's job).
            # retry=None: the library's default retry could turn one poll into several calls.
            response = self.client.list_log_entries(request=request, retry=None, timeout=CALL_TIMEOUT_SECONDS)
            entries = list(response.entries)
        except gexc.PermissionDenied as exc:
            self._disabled = True
            self.warn(
                f"live log off: cannot read Cloud Logging in project {self.project} ({exc.message}); "
                "grant roles/logging.viewer to see the job's log here. The job goes on."
            )
            return [], False
        except gexc.GoogleAPICallError as exc:
            self._failing = True
            if not self._warned:
                self._warned = True
                self.warn(f"live log: Cloud Logging failed ({exc.message}); retrying on later polls")
            return [], False
        self._failing = False
        lines: list[str] = []
        for entry in entries:
            task = entry.resource.labels.get("task_name") or entry.labels.get(TASK_LABEL, "")
            lines += prefixed(replica_name(task), entry_text(entry))
            self.position = LogPosition(rfc3339(entry.timestamp), entry.insert_id)
        return lines, len(entries) >= PAGE_SIZE
