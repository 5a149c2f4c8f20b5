"""Submitting a job again when Spot preemption took its machines while it ran, boundedly.

What Vertex does (cloud.google.com/vertex-ai/docs/training/understanding-training-service, "Restart workers
during the training job"): a worker whose VM goes away is restarted on another VM; a worker that keeps dying
is restarted up to 5 times, then the whole job is retried up to 3 times and finally fails. For Spot VMs
(cloud.google.com/vertex-ai/docs/predictions/use-spot-vms, "Preemption handling"): "When Spot VMs are
preempted, the ... job fails with a STOCKOUT error". So a preemption that Vertex does not absorb ends the job
FAILED with a stockout/preemption message. A job that had started (it has a start_time) is submitted again on
the same shape, and resumes from the checkpoint directory because it has the same base_output_dir. A job that
never started stocked out: Vertex already retried it, so placing.py moves it to the next shape.

Every attempt carries the job's key label (so an interrupted `pulumi up` adopts the live attempt; failed ones
are never adoptable) and ATTEMPT_LABEL = "<attempt on this shape>-<running seconds of the earlier attempts>"
plus "-<shape index>" on a fallback shape, so the total running time and the shape survive a provider restart
without any other record.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from google.cloud import aiplatform_v1

from infra.vertex.lifecycle import error_classes
from infra.vertex.lifecycle.status import JobStatus, seconds_between

ATTEMPT_LABEL = "vertex_training_attempt"
DEFAULT_MAX_RESTARTS = 3
_ATTEMPT = re.compile(r"(\d+)-(\d+)(?:-(\d+))?")


def lost_capacity(status: JobStatus) -> bool:
    """True when the job ended because its machines were taken away or could not be had (error_classes.py)."""
    return status.state == "JOB_STATE_FAILED" and error_classes.lost_machines(status.error)


def running_seconds(status: JobStatus) -> float:
    """How long this attempt ran (from RUNNING to its end, or to now while it runs)."""
    return seconds_between(status.start_time, status.end_time)


@dataclass(frozen=True)
class Attempt:
    number: int  # 1 for the first submission on this shape
    earlier_seconds: int  # running time of the attempts before this one (every shape)
    shape: int = 0  # index into placement.shapes(props): 0 is the primary

    @classmethod
    def of(cls, status: JobStatus) -> Attempt:
        match = _ATTEMPT.fullmatch(status.labels.get(ATTEMPT_LABEL, ""))
        return cls(int(match[1]), int(match[2]), int(match[3] or 0)) if match else cls(1, 0)

    @property
    def label(self) -> str:
        return f"{self.number}-{self.earlier_seconds}" + (f"-{self.shape}" if self.shape else "")

    def total_seconds(self, status: JobStatus) -> float:
        return self.earlier_seconds + running_seconds(status)

    def next(self, ended: JobStatus) -> Attempt:
        """The same shape again."""
        return Attempt(self.number + 1, int(self.total_seconds(ended)), self.shape)


def may_restart(allowed: int, ended: JobStatus) -> bool:
    """A job that ran, then lost its machines, within `allowed` restarts (max_restarts) on this shape."""
    return bool(ended.start_time) and lost_capacity(ended) and Attempt.of(ended).number <= allowed


def remaining_seconds(timeout_seconds: float, attempt: Attempt) -> int:
    """What is left of timeout_seconds, a cap on the running time of all attempts together."""
    return int(timeout_seconds) - attempt.earlier_seconds


def resubmit_delay(attempt: Attempt) -> float:
    """Seconds to wait before submitting `attempt`: a stockout seldom clears at once (1, 2, 4 ... 15 min)."""
    return float(min(60 * 2 ** (attempt.number - 2), 900))


def resubmission(job: aiplatform_v1.CustomJob, attempt: Attempt, remaining: int) -> aiplatform_v1.CustomJob:
    """The same job, labelled with its attempt (same key label, same base_output_dir: it resumes) and
    allowed only the running time the earlier attempts left."""
    again = aiplatform_v1.CustomJob(job)
    again.labels[ATTEMPT_LABEL] = attempt.label
    again.job_spec.scheduling.timeout = datetime.timedelta(seconds=remaining)
    return again
