"""The prop keys every job kind shares with the lifecycle: what `JobRequest.parse` (request.py) needs from a
kind's defaulted props, and the outputs `JobProvider.outputs` gives every kind."""

from __future__ import annotations

from infra.vertex.lifecycle.outcome import SHARED

# What every kind's `with_defaults` fills in (or its check requires): JobRequest.parse reads them.
REQUIRED = frozenset(
    {
        "runner",
        "display_name",
        "labels",
        "wait",
        "poll_interval_seconds",
        "queue_timeout_seconds",
        "timeout_seconds",
    }
)
# The outputs job_provider.py gives every kind (a kind's OUTPUTS adds its own: model_dir, trials, ...).
SHARED_OUTPUTS = (*SHARED, "placement", "attempts")
