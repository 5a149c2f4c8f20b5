"""A progress line while a job waits for machines (queued or provisioning) and nothing else is printed."""

from __future__ import annotations

from dataclasses import dataclass

from infra.dynamic.polling import duration_text
from infra.vertex.capacity.quotas import quota_page

HEARTBEAT_SECONDS = 180.0
# Past this long in the queue the line names the likely causes and where to look.
QUEUED_LONG_SECONDS = 900.0
WAITING_STATES = frozenset({"JOB_STATE_QUEUED", "JOB_STATE_PENDING"})


def heartbeat_line(state: str, seconds_in_state: float, spot: bool, project: str, console_url: str) -> str:
    """What the job is waiting for, how long it has waited, and (when long) why and where to look."""
    short = state.removeprefix("JOB_STATE_").lower()
    line = f"still {short} after {duration_text(seconds_in_state)}"
    if state == "JOB_STATE_PENDING":
        return line + " (machines are being provisioned and the image pulled)"
    if state != "JOB_STATE_QUEUED" or seconds_in_state < QUEUED_LONG_SECONDS:
        return line
    quota = "preemptible (Spot) custom training quota" if spot else "custom training quota"
    capacity = "Spot capacity for this machine type in the region" if spot else "capacity in the region"
    return (
        f"{line}: Vertex AI queues a job until the project has enough {quota} "
        f"(aiplatform.googleapis.com/custom_model_training_*) and {capacity}. "
        f"Quotas: {quota_page(project)} ; job: {console_url}"
    )


@dataclass
class Heartbeat:
    """Remembers when the job entered its state and when the last line went out; says when one is due."""

    state: str = ""
    entered: float = 0.0
    last: float = 0.0

    def due(self, state: str, now: float) -> float | None:
        """Seconds in the waiting state when a heartbeat is due now, else None."""
        if state != self.state:
            self.state, self.entered, self.last = state, now, now
            return None
        if state not in WAITING_STATES or now - self.last < HEARTBEAT_SECONDS:
            return None
        self.last = now
        return now - self.entered
