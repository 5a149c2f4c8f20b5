"""The stack's live Vertex AI jobs as leftovers, through the kill switch's own listing (infra/guard/
live_jobs.py), in the regions the stack names or every Vertex AI region; `cancel` stops them and waits until
each is terminal.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from google.cloud import aiplatform_v1

# googleapis-common-protos (which holds google.cloud.location) ships .pyi files but no py.typed marker.
from google.cloud.location import locations_pb2  # type: ignore[import-untyped]

from infra.dynamic import polling
from infra.guard import live_jobs
from infra.guard.live_jobs import LiveJob, StackId
from infra.leftovers import job_cost
from infra.leftovers.items import Found, Item
from infra.vertex.cost.pricing import Rate

ClientFactory = Callable[[str], aiplatform_v1.JobServiceClient]
LISTED_STATES = (*live_jobs.LIVE_STATES, *live_jobs.STOPPING_STATES)
# How long `--cancel` waits for cancelled jobs to be terminal (Vertex cancels asynchronously: CANCELLING, then
# CANCELLED, usually within a minute or two), and how often it looks.
CANCEL_WAIT_SECONDS = 600.0
POLL_SECONDS = 5.0
REST_CANCEL = (
    'curl -X POST -H "Authorization: Bearer $(gcloud auth print-access-token)" '
    "https://{region}-aiplatform.googleapis.com/v1/{name}:cancel"
)


def all_regions(project: str, home: str, client_factory: ClientFactory = live_jobs.make_client) -> list[str]:
    """Every Vertex AI region of the project: Google's Locations API (google.cloud.location ListLocations) on
    the aiplatform endpoint of the home region, every page of it.

    The clients' `list_locations` mixin returns one raw ListLocationsResponse, not a pager, and the response
    carries a `next_page_token` (google/cloud/location/locations.proto: "The standard List next-page token"),
    so the pages are followed here."""
    found: set[str] = set()
    token = ""
    with client_factory(home) as client:
        while True:
            response = client.list_locations(
                request=locations_pb2.ListLocationsRequest(name=f"projects/{project}", page_token=token),
                timeout=live_jobs.CALL_TIMEOUT_S,
            )
            found.update(location.location_id for location in response.locations if location.location_id)
            token = response.next_page_token
            if not token:
                return sorted(found)


def cancel_command(job: LiveJob, project: str) -> str:
    """The command that stops one job: gcloud where it has a group for the kind, else the REST call."""
    if job.kind.gcloud_group:
        return (
            f"gcloud ai {job.kind.gcloud_group} cancel {job.job_id} --region={job.region} --project={project}"
        )
    return REST_CANCEL.format(region=job.region, name=job.name)


def _rate(job: LiveJob, project: str) -> Rate | None:
    """Its hourly price; a price that cannot be worked out never hides the job: it is then unpriced."""
    try:
        return job_cost.hourly(job, project)
    except Exception:
        return None


def item(job: LiveJob, project: str) -> Item:
    """One job: its hourly price (training list prices) while it runs; a stopping one bills until stopped."""
    rate = _rate(job, project) if job.state in live_jobs.LIVE_STATES else None
    if job.state not in live_jobs.LIVE_STATES:
        cost = "bills until its machines are released"
    elif rate is None:
        cost = "bills by the hour while live (no sourced price for its machines)"
    else:
        cost = f"{rate.text()} while live"
    return Item(
        kind=job.kind.name,
        name=job.name,
        region=job.region,
        state=job.state.removeprefix("JOB_STATE_"),
        bills=True,
        cost=cost,
        remove=cancel_command(job, project),
        hourly_usd=None if rate is None else round(rate.usd, 6),
        hourly_is_bound=bool(rate and rate.bound),
        live_job=True,
    )


def unreadable(where: str, error: str) -> str:
    """One cannot_tell entry: `<region> <list method>` -> `<region>: <Kind> jobs (<why>)`."""
    region, _, method = where.partition(" ")
    kind = next((k.name for k in live_jobs.JOB_KINDS if k.list_method == method), None)
    what = f"{kind} jobs" if kind else "Vertex AI (no client for the region)"
    return f"{region}: {what} ({error.splitlines()[0] if error else 'no reason given'})"


def find(
    stack: StackId, regions: Iterable[str], client_factory: ClientFactory = live_jobs.make_client
) -> tuple[Found, list[LiveJob]]:
    """The live and stopping jobs of every kind in `regions` as items (a CANCELLING job may still hold its
    machines); a kind or region that cannot be listed is named."""
    listing = live_jobs.list_live_jobs(stack, regions, client_factory, states=LISTED_STATES)
    found = Found(
        items=[item(job, stack.project) for job in listing.jobs],
        cannot_tell=[unreadable(where, error) for where, error in listing.unlisted.items()],
    )
    return found, listing.jobs


@dataclass(frozen=True)
class Stopped:
    job: LiveJob
    outcome: str  # cancelled, already stopping, failed
    final_state: str  # JobState name when last read; "" when gone
    reason: str = ""


def cancel(
    jobs: list[LiveJob],
    client_factory: ClientFactory = live_jobs.make_client,
    wait_seconds: float = CANCEL_WAIT_SECONDS,
    poll_seconds: float = POLL_SECONDS,
    say: Callable[[str], None] = print,
) -> list[Stopped]:
    """Cancel each job (studies first, as listed), then wait, at most `wait_seconds`, until each stopped."""
    clients: dict[str, aiplatform_v1.JobServiceClient] = {}

    def client(region: str) -> aiplatform_v1.JobServiceClient:
        if region not in clients:
            clients[region] = client_factory(region)
        return clients[region]

    try:
        results = {}
        for job in jobs:
            if job.state in live_jobs.STOPPING_STATES:
                results[job.name] = live_jobs.CancelResult(job, "already stopping")
                continue
            try:
                results[job.name] = live_jobs.cancel_job(client(job.region), job)
            except live_jobs.REGION_ERRORS as err:
                results[job.name] = live_jobs.CancelResult(job, "failed", str(err))
            say(f"{results[job.name].outcome}: {job.kind.name} {job.name}")
        waiting = [j for j in jobs if results[j.name].outcome != "failed"]
        if waiting:
            say(f"waiting up to {wait_seconds:.0f} s for {len(waiting)} job(s) to stop")
        states = _wait(waiting, client, wait_seconds, poll_seconds)
        return [
            Stopped(job, results[job.name].outcome, states.get(job.name, job.state), results[job.name].reason)
            for job in jobs
        ]
    finally:
        for made in clients.values():
            made.transport.close()


def _wait(
    jobs: list[LiveJob],
    client: Callable[[str], aiplatform_v1.JobServiceClient],
    wait_seconds: float,
    poll_seconds: float,
) -> dict[str, str]:
    """Each job's last read state once none is live or stopping, or when `wait_seconds` have passed (the
    provider's own poll loop, infra/dynamic/polling.py)."""
    unstopped = (*live_jobs.LIVE_STATES, *live_jobs.STOPPING_STATES)

    def read(states: dict[str, str]) -> dict[str, str]:
        now = dict(states)
        for job in jobs:
            # A region that fails is read again next round; the report after the wait lists what is live.
            if now[job.name] in unstopped:
                with contextlib.suppress(*live_jobs.REGION_ERRORS):
                    now[job.name] = live_jobs.job_state(client(job.region), job)
        return now

    def stopped(states: dict[str, str]) -> bool:
        return all(state not in unstopped for state in states.values())

    first = read({job.name: job.state for job in jobs})
    return polling.poll_until(first, read, stopped, time.time() + wait_seconds, poll_seconds)
