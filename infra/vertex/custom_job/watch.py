"""What the provider prints while it waits for a job: the job's own log lines and a heartbeat while queued."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from infra.vertex.lifecycle.heartbeat import Heartbeat, heartbeat_line
from infra.vertex.lifecycle.request import JobRequest, Placed
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.logs import cloud as logs
from infra.vertex.logs.local import LocalJobLog
from infra.vertex.runners.local.runner import job_dir

# Nothing logs before the machines exist: reading the log while queued would only cost calls.
_NO_LOG_YET = frozenset({"JOB_STATE_QUEUED"})


def job_log(request: JobRequest, status: JobStatus, say: Callable[[str], None]) -> logs.JobLog:
    """Where this job's log lines come from: the replica log files (local runner) or Cloud Logging."""
    if request.runner == "local":
        return LocalJobLog(job_dir(request.common.output_dir, status.name))
    created = datetime.datetime.fromisoformat(status.create_time) if status.create_time else None
    since = logs.rfc3339(created or datetime.datetime.now(datetime.UTC))
    return logs.CloudJobLog(request.project or "", status.name, since, warn=say)


@dataclass
class Watcher:
    """Called after every poll of one attempt: one Logging call per poll (the last one reads what is left)."""

    spot: bool  # the shape's strategy is SPOT: a long queue names the preemptible quota
    project: str
    log: logs.JobLog
    say: Callable[[str], None]
    clock: Callable[[], float] = time.time
    heartbeat: Heartbeat = field(default_factory=Heartbeat)

    def tick(self, status: JobStatus) -> None:
        """New log lines (all that is left once the job is terminal), then a heartbeat if one is due."""
        if status.state not in _NO_LOG_YET:
            for line in self.log.read(final=status.terminal):
                self.say(line)
        waited = self.heartbeat.due(status.state, self.clock())
        if waited is not None:
            self.say(
                heartbeat_line(
                    status.state,
                    waited,
                    self.spot,
                    self.project,
                    status.console_url,
                )
            )


def watcher(placed: Placed, status: JobStatus, say: Callable[[str], None]) -> Watcher:
    request = placed.request
    return Watcher(placed.spot, request.project or "", job_log(request, status, say), say)
