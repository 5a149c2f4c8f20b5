"""This stack's live Vertex AI jobs, of every kind, in given regions: the one listing and cancel that both the
budget kill switch (main.py) and `python -m infra.leftovers` use.

Shipped beside main.py in the kill-switch function's source (infra/components/killswitch.py SOURCE_FILES), so
it imports nothing from `infra`; `infra` imports it. It lists and cancels each kind of job_kinds.JOB_KINDS.
A kind or a region that cannot be listed is recorded in
`Listing.unlisted` and stops nothing else.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport

from .job_kinds import JOB_KINDS, JobKind

__all__ = ["JOB_KINDS", "JobKind"]
# PAUSED is left out: the stack's jobs do not pause, and a paused job holds no machines.
LIVE_STATES = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING")
# Cancel is asynchronous (CANCELLING, then CANCELLED): a job in these states bills nothing more once stopped.
STOPPING_STATES = ("JOB_STATE_CANCELLING",)
EMULATOR_ENV = "VERTEX_AI_EMULATOR_HOST"
# The client sets no deadline of its own; a hung call must fail inside the function timeout (120 s).
CALL_TIMEOUT_S = 30.0
# What one region or one job kind may fail with without stopping the others: any API error, and a credential
# that could not be refreshed for that region's endpoint.
REGION_ERRORS = (api_exceptions.GoogleAPIError, auth_exceptions.GoogleAuthError)


@dataclass(frozen=True)
class StackId:
    """Whose jobs: the labels each job of the stack carries (infra/labels.py), in one Google Cloud project."""

    project: str
    pulumi_project: str
    pulumi_stack: str

    def parent(self, region: str) -> str:
        return f"projects/{self.project}/locations/{region}"


@dataclass(frozen=True)
class LiveJob:
    kind: JobKind
    name: str  # projects/P/locations/R/<collection>/ID
    display_name: str
    state: str
    create_time: str  # RFC 3339, "" when unknown
    # The job as Vertex listed it (a CustomJob, ...): for a reader that needs more than the above.
    resource: Any = field(default=None, compare=False, repr=False)

    @property
    def region(self) -> str:
        parts = self.name.split("/")
        return parts[3] if len(parts) > 3 else ""

    @property
    def job_id(self) -> str:
        return self.name.rsplit("/", 1)[-1]


@dataclass
class Listing:
    jobs: list[LiveJob] = field(default_factory=list)
    # "<region> <list method>" (or "<region> client") -> why it could not be listed
    unlisted: dict[str, str] = field(default_factory=dict)

    def merge(self, other: Listing) -> None:
        self.jobs += other.jobs
        self.unlisted.update(other.unlisted)


@dataclass(frozen=True)
class CancelResult:
    job: LiveJob
    outcome: str  # "cancelled" | "already stopping" | "failed"
    reason: str = ""


def job_filter(pulumi_project: str, pulumi_stack: str, states: Iterable[str] = LIVE_STATES) -> str:
    either = " OR ".join(f'state="{s}"' for s in states)
    return f'labels.pulumi_project="{pulumi_project}" AND labels.pulumi_stack="{pulumi_stack}" AND ({either})'


def is_ours_and_live(
    job: Any, pulumi_project: str, pulumi_stack: str, states: Iterable[str] = LIVE_STATES
) -> bool:
    """Second check after the server-side filter: never cancel a job the filter let through by mistake."""
    labels = dict(job.labels)
    return (
        labels.get("pulumi_project") == pulumi_project
        and labels.get("pulumi_stack") == pulumi_stack
        and aiplatform_v1.JobState(job.state).name in tuple(states)
    )


def regional_client(client_class: Any, transport_class: Any, region: str) -> Any:
    """A Vertex AI client on the regional endpoint with Application Default Credentials; plain gRPC without
    credentials when an emulator is set."""
    emulator = os.environ.get(EMULATOR_ENV)
    if emulator:
        return client_class(transport=transport_class(channel=grpc.insecure_channel(emulator)))
    return client_class(client_options={"api_endpoint": f"{region}-aiplatform.googleapis.com"})


def make_client(region: str) -> aiplatform_v1.JobServiceClient:
    """The JobService client of `region` (regional_client)."""
    client: aiplatform_v1.JobServiceClient = regional_client(
        aiplatform_v1.JobServiceClient, JobServiceGrpcTransport, region
    )
    return client


def _live_job(kind: JobKind, job: Any) -> LiveJob:
    created = job.create_time
    return LiveJob(
        kind=kind,
        name=job.name,
        display_name=job.display_name,
        state=aiplatform_v1.JobState(job.state).name,
        create_time=created.isoformat() if created else "",
        resource=job,
    )


def list_in_region(
    client: aiplatform_v1.JobServiceClient,
    stack: StackId,
    region: str,
    on_found: Callable[[LiveJob], None] | None = None,
    states: tuple[str, ...] = LIVE_STATES,
) -> Listing:
    """The stack's jobs in `states` (the kill switch: live ones) of each kind in `region`, in JOB_KINDS
    order; `on_found` (the kill switch's cancel) runs on each kind's jobs before the next kind is listed. A
    kind whose listing fails is recorded and the next kind is still listed."""
    listing = Listing()
    for kind in JOB_KINDS:
        request = getattr(aiplatform_v1, kind.list_request)(
            parent=stack.parent(region), filter=job_filter(stack.pulumi_project, stack.pulumi_stack, states)
        )
        try:
            found = [
                _live_job(kind, job)
                for job in getattr(client, kind.list_method)(request=request, timeout=CALL_TIMEOUT_S)
                if is_ours_and_live(job, stack.pulumi_project, stack.pulumi_stack, states)
            ]
        except REGION_ERRORS as err:
            listing.unlisted[f"{region} {kind.list_method}"] = str(err)
            continue
        listing.jobs += found
        if on_found is not None:
            for job in found:
                on_found(job)
    return listing


def list_live_jobs(
    stack: StackId,
    regions: Iterable[str],
    client_factory: Callable[[str], aiplatform_v1.JobServiceClient] = make_client,
    on_found: Callable[[aiplatform_v1.JobServiceClient, LiveJob], None] | None = None,
    states: tuple[str, ...] = LIVE_STATES,
) -> Listing:
    """list_in_region in each region (a regional endpoint each); a region whose client cannot be made stops
    no other. `on_found(client, job)` as in list_in_region, with that region's client."""
    listing = Listing()
    for region in dict.fromkeys(regions):
        try:
            with client_factory(region) as client:
                act = None if on_found is None else functools.partial(on_found, client)
                listing.merge(list_in_region(client, stack, region, act, states))
        except REGION_ERRORS as err:
            listing.unlisted[f"{region} client"] = str(err)
    return listing


def cancel_job(client: aiplatform_v1.JobServiceClient, job: LiveJob) -> CancelResult:
    """Ask Vertex to cancel `job` (asynchronous). A job that finished or began cancelling since it was listed
    (FAILED_PRECONDITION, NOT_FOUND) is already stopping: nothing left to do."""
    try:
        getattr(client, job.kind.cancel_method)(name=job.name, timeout=CALL_TIMEOUT_S)
    except (api_exceptions.FailedPrecondition, api_exceptions.NotFound) as err:
        return CancelResult(job, "already stopping", str(err))
    except REGION_ERRORS as err:
        return CancelResult(job, "failed", str(err))
    return CancelResult(job, "cancelled")


def job_state(client: aiplatform_v1.JobServiceClient, job: LiveJob) -> str:
    """The job's state now (JobState name); NOT_FOUND reads as gone ("")."""
    try:
        found = getattr(client, job.kind.get_method)(name=job.name, timeout=CALL_TIMEOUT_S)
    except api_exceptions.NotFound:
        return ""
    return aiplatform_v1.JobState(found.state).name
