"""The stack's endpoints and deployed models as leftovers, through the kill switch's own listing
(infra/guard/deployed_models.py): every endpoint in the stack's regions that carries its labels or serves a
version of its model (deployed by hand too), each deployed model with its replicas, its hourly price at
prediction prices (infra/vertex/cost/serving.py) or "no sourced price", and the command that undeploys it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from google.cloud import aiplatform_v1

from infra.guard import deployed_models
from infra.guard.deployed_models import Served
from infra.guard.live_jobs import StackId
from infra.leftovers.items import Found, Item
from infra.vertex.cost.serving import SOURCE, serving_cost

ClientFactory = Callable[[str], aiplatform_v1.EndpointServiceClient]


def item(served: Served) -> Item:
    """One deployed model: it bills every hour for its replicas (at least its minimum), requests or not."""
    replicas = max(served.available_replicas, served.min_replicas)
    cost = serving_cost(
        served.region,
        served.machine_type,
        served.accelerator_type or None,
        served.accelerator_count,
        served.min_replicas,
        served.max_replicas,
        served.spot,
    )
    hourly = cost.hourly(replicas)
    text = (
        f"USD {hourly:.2f}/h ({replicas} replica(s) of {served.machine_type}), every hour"
        if hourly is not None
        else f"no sourced price ({replicas} replica(s) of {served.machine_type}, every hour)"
    )
    whose = "" if served.endpoint_labelled else ", deployed by hand"
    return Item(
        kind="DeployedModel",
        name=f"{served.endpoint}/deployedModels/{served.deployed_model_id} ({served.model}{whose})",
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
        price_source=SOURCE if hourly is not None else None,
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
    found = Found(items=[item(s) for s in listed.served])
    serving = {s.endpoint for s in listed.served}
    found.items += [endpoint_item(name) for name in listed.labelled if name not in serving]
    found.cannot_tell += [f"endpoints ({where}: {error})" for where, error in listed.unlisted.items()]
    return found
