"""The stack's endpoints and deployed models as leftovers, through the kill switch's own listing
(infra/guard/deployed_models.py): every endpoint in the stack's regions that carries its labels or serves a
version of its model (deployed by hand too), each deployed model with its replicas, its hourly price at
prediction prices (infra/vertex/cost/serving.py) or "no sourced price", and the command that undeploys it."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable

from google.cloud import aiplatform_v1

from infra.dynamic import polling
from infra.guard import deployed_models
from infra.guard.deployed_models import Served
from infra.guard.live_jobs import StackId
from infra.leftovers import vertex_jobs
from infra.leftovers.items import DEPLOYED_MODEL, Found, Item
from infra.vertex.cost.serving import serving_cost

ClientFactory = Callable[[str], aiplatform_v1.EndpointServiceClient]


def item(served: Served, project: str | None = None) -> Item:
    """One deployed model: it bills every hour for its replicas (at least its minimum), requests or not;
    priced with `project`'s credentials paying for the Billing Catalog read."""
    replicas = max(served.available_replicas, served.min_replicas)
    cost = serving_cost(
        served.region,
        served.machine_type,
        served.accelerator_type or None,
        served.accelerator_count,
        served.min_replicas,
        served.max_replicas,
        served.spot,
        project,
        served.reserved,
    )
    hourly = cost.hourly(replicas)
    text = (
        f"USD {hourly:.2f}/h ({replicas} replica(s) of {served.machine_type}), every hour"
        if hourly is not None
        else f"no sourced price ({replicas} replica(s) of {served.machine_type}, every hour)"
    )
    whose = "" if served.endpoint_labelled else ", deployed by hand"
    return Item(
        kind=DEPLOYED_MODEL,
        name=f"{_deployed_name(served)} ({served.model}{whose})",
        region=served.region,
        state=(
            f"{served.available_replicas} up of {served.min_replicas}-{served.max_replicas} replicas, "
            f"{served.traffic_percent}% traffic"
        ),
        bills=True,
        cost=text,
        remove=served.undeploy_command(),
        hourly_usd=hourly,
        monthly_usd=cost.monthly_bound(replicas),
        monthly_is_bound=hourly is not None,
        price_source=cost.source if hourly is not None else None,
    )


def endpoint_item(name: str) -> Item:
    """The stack's endpoint with nothing deployed: it bills nothing (only deployed models bill)."""
    region = name.split("/")[3]
    return Item(
        kind="Endpoint",
        name=name,
        region=region,
        state="no deployed model",
        bills=False,
        cost="free (an endpoint bills only for its deployed models)",
        remove=f"gcloud ai endpoints delete {name.rsplit('/', 1)[-1]} --region={region}",
    )


def find(
    stack: StackId,
    regions: Iterable[str],
    client_factory: ClientFactory = deployed_models.make_endpoint_client,
) -> Found:
    listed = deployed_models.list_served(stack, regions, client_factory)
    found = Found(items=[item(s, stack.project) for s in listed.served])
    serving = {s.endpoint for s in listed.served}
    found.items += [endpoint_item(name) for name in listed.labelled if name not in serving]
    found.cannot_tell += [f"endpoints ({where}: {error})" for where, error in listed.unlisted.items()]
    return found


def undeploy(
    stack: StackId,
    regions: Iterable[str],
    say: Callable[[str], None],
    client_factory: ClientFactory = deployed_models.make_endpoint_client,
) -> None:
    """Undeploy every deployed model of the stack found (the kill switch's listing and undeploy) and wait,
    as long as for jobs, until none is listed (UndeployModel is a long-running operation); one refused while
    another left its endpoint (the service finishing that first) is asked again once that one is gone."""
    deadline = time.time() + vertex_jobs.CANCEL_WAIT_SECONDS
    for round_ in itertools.count():
        listed, asked = _ask(stack, regions, client_factory)
        for where, error in listed.unlisted.items():
            say(f"could not list endpoints ({where}: {error})")
        if not asked and round_ == 0:
            say("no deployed model to undeploy")
        for result in asked:
            reason = f" ({result.reason})" if result.outcome == "failed" else ""
            say(f"{result.outcome}: {_deployed_name(result.served)}{reason}")
        leaving = {_deployed_name(r.served) for r in asked if r.outcome == "undeploying"}
        if not leaving or not _gone(stack, regions, client_factory, leaving, deadline, say):
            return
        if not any(r.outcome == "failed" for r in asked) or time.time() >= deadline:
            return
        say("asking again for the refused ones, now that the others left their endpoints")


def _ask(
    stack: StackId, regions: Iterable[str], client_factory: ClientFactory
) -> tuple[deployed_models.Found, list[deployed_models.UndeployResult]]:
    """Lists the stack's deployed models, region by region, and asks Vertex to undeploy each found."""
    asked: list[deployed_models.UndeployResult] = []
    listed = deployed_models.list_served(
        stack,
        regions,
        client_factory,
        lambda client, served: asked.extend(deployed_models.undeploy_all(client, served)),
    )
    return listed, asked


def _gone(
    stack: StackId,
    regions: Iterable[str],
    client_factory: ClientFactory,
    leaving: set[str],
    deadline: float,
    say: Callable[[str], None],
) -> bool:
    """Waits until none of `leaving` is listed, or the deadline; says which are still deployed then."""
    say(f"waiting up to {max(deadline - time.time(), 0):.0f} s for {len(leaving)} deployed model(s) to go")

    def still(before: set[str]) -> set[str]:
        now = deployed_models.list_served(stack, regions, client_factory)
        if now.unlisted:  # a region not read is read again next round; the listing after says the rest
            return before
        return leaving & {_deployed_name(one) for one in now.served}

    left = polling.poll_until(
        still(leaving), still, lambda left: not left, deadline, vertex_jobs.POLL_SECONDS
    )
    for name in sorted(left):
        say(f"still deployed: {name}")
    return not left


def _deployed_name(served: Served) -> str:
    return f"{served.endpoint}/deployedModels/{served.deployed_model_id}"
