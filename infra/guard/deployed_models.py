"""This stack's models deployed on Vertex AI endpoints, in given regions: the one listing and undeploy that
both the budget kill switch (main.py) and `python -m infra.leftovers` use, and the traffic split that
undeploys a model (which the deployment provider uses too).

Shipped beside main.py in the kill-switch function's source (infra/components/killswitch.py SOURCE_FILES), so
it imports nothing from `infra`; `infra` imports it.

Whose: every model deployed on an endpoint that carries the stack's labels (the endpoint the stack owns),
and every deployment of the stack's Model Registry model (`<pulumi project>-<stack>`) on any endpoint (one
deployed by hand). A DeployedModel carries no labels; its `model` may name the project by number, so the
model is matched on its location and id. Facts (google/cloud/aiplatform/v1 endpoint_service.proto,
googleapis f8291d2b89f0, read 2026-11-29): UndeployModel is a long-running operation; a DeployedModel is
undeployed "only if it doesn't have any traffic assigned to it when this method executes, or if this field
[traffic_split] unassigns any traffic to it"; a non-empty split must add up to 100; undeploying the last
one leaves the split empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.endpoint_service.transports import EndpointServiceGrpcTransport

from .live_jobs import CALL_TIMEOUT_S, REGION_ERRORS, StackId, regional_client

NOT_FOUND = api_exceptions.NotFound


def make_endpoint_client(region: str) -> aiplatform_v1.EndpointServiceClient:
    """Regional endpoint with Application Default Credentials, or the emulator (live_jobs.regional_client)."""
    client: aiplatform_v1.EndpointServiceClient = regional_client(
        aiplatform_v1.EndpointServiceClient, EndpointServiceGrpcTransport, region
    )
    return client


def stack_model_id(pulumi_project: str, pulumi_stack: str) -> str:
    """The id of the stack's Model Registry model (infra/workloads/model.py registers its versions there)."""
    return f"{pulumi_project}-{pulumi_stack}"


@dataclass(frozen=True)
class Served:
    """One deployed model of the stack, as its endpoint lists it."""

    endpoint: str  # projects/P/locations/R/endpoints/E
    endpoint_labelled: bool  # the endpoint carries the stack's labels (the stack's own)
    deployed_model_id: str
    model: str
    model_version_id: str
    traffic_percent: int
    min_replicas: int
    max_replicas: int
    available_replicas: int
    machine_type: str
    accelerator_type: str  # "" for none
    accelerator_count: int
    spot: bool
    # The whole endpoint as listed, other models included: its traffic split and deployed ids, oldest first.
    endpoint_traffic: tuple[tuple[str, int], ...] = ()
    endpoint_ids: tuple[str, ...] = ()

    @property
    def region(self) -> str:
        parts = self.endpoint.split("/")
        return parts[3] if len(parts) > 3 else ""

    def undeploy_command(self) -> str:
        endpoint_id = self.endpoint.rsplit("/", 1)[-1]
        return (
            f"gcloud ai endpoints undeploy-model {endpoint_id} --region={self.region} "
            f"--deployed-model-id={self.deployed_model_id}"
        )


@dataclass
class Found:
    served: list[Served] = field(default_factory=list)
    # Endpoints carrying the stack's labels (its own), with or without a deployed model.
    labelled: list[str] = field(default_factory=list)
    # "<region> list_endpoints" (or "<region> client") -> why it could not be listed
    unlisted: dict[str, str] = field(default_factory=dict)


def _labelled(endpoint: Any, stack: StackId) -> bool:
    labels = dict(endpoint.labels)
    return (
        labels.get("pulumi_project") == stack.pulumi_project
        and labels.get("pulumi_stack") == stack.pulumi_stack
    )


def is_stack_model(model: str, stack: StackId, region: str) -> bool:
    """`model` (any version, by id or alias) is the stack's model in `region`, by project id or number."""
    path = model.split("@", 1)[0].split("/")
    model_id = stack_model_id(stack.pulumi_project, stack.pulumi_stack)
    return len(path) == 6 and path[2:] == ["locations", region, "models", model_id]


def _served(endpoint: Any, labelled: bool, deployed: Any) -> Served:
    resources, machine = deployed.dedicated_resources, deployed.dedicated_resources.machine_spec
    accelerator = aiplatform_v1.AcceleratorType(machine.accelerator_type).name
    return Served(
        endpoint=endpoint.name,
        endpoint_labelled=labelled,
        deployed_model_id=deployed.id,
        model=deployed.model,
        model_version_id=deployed.model_version_id,
        traffic_percent=dict(endpoint.traffic_split).get(deployed.id, 0),
        min_replicas=resources.min_replica_count,
        max_replicas=resources.max_replica_count,
        available_replicas=deployed.status.available_replica_count,
        machine_type=machine.machine_type,
        accelerator_type="" if accelerator == "ACCELERATOR_TYPE_UNSPECIFIED" else accelerator,
        accelerator_count=machine.accelerator_count,
        spot=resources.spot,
        endpoint_traffic=tuple(sorted(dict(endpoint.traffic_split).items())),
        endpoint_ids=tuple(d.id for d in endpoint.deployed_models),
    )


def stack_served(endpoints: Iterable[Any], stack: StackId, region: str) -> list[Served]:
    """The stack's deployed models on these endpoints: all of a labelled endpoint's, the stack's model's on
    any other."""
    found = []
    for endpoint in endpoints:
        labelled = _labelled(endpoint, stack)
        found += [
            _served(endpoint, labelled, d)
            for d in endpoint.deployed_models
            if labelled or is_stack_model(d.model, stack, region)
        ]
    return found


def list_served(
    stack: StackId,
    regions: Iterable[str],
    client_factory: Callable[[str], aiplatform_v1.EndpointServiceClient] = make_endpoint_client,
    on_found: Callable[[aiplatform_v1.EndpointServiceClient, list[Served]], None] | None = None,
) -> Found:
    """Every endpoint of each region is listed (a hand-made one carries no label to filter on); a region that
    fails stops no other. `on_found(client, served)` gets each region's finds with that region's client."""
    found = Found()
    for region in dict.fromkeys(regions):
        try:
            with client_factory(region) as client:
                try:
                    endpoints = list(
                        client.list_endpoints(parent=stack.parent(region), timeout=CALL_TIMEOUT_S)
                    )
                except REGION_ERRORS as err:
                    found.unlisted[f"{region} list_endpoints"] = str(err)
                    continue
                served = stack_served(endpoints, stack, region)
                found.served += served
                found.labelled += [e.name for e in endpoints if _labelled(e, stack)]
                if on_found is not None:
                    on_found(client, served)
        except REGION_ERRORS as err:
            found.unlisted[f"{region} client"] = str(err)
    return found


def traffic_without(split: Mapping[str, int], deployed_ids: Sequence[str], removed: str) -> dict[str, int]:
    """The traffic split that undeploys `removed`: {} (leave the endpoint's as is) when it has no traffic or
    is the last model (Vertex empties the split then); else its share goes to the others, in proportion to
    what they hold (to the newest other model when none holds any), summing to 100."""
    share = split.get(removed, 0)
    others = [d for d in deployed_ids if d != removed]
    if share == 0 or not others:
        return {}
    kept = {d: split.get(d, 0) for d in others if split.get(d, 0) > 0}
    if not kept:
        return {others[-1]: 100}
    total = sum(kept.values())
    out = {d: v * 100 // total for d, v in kept.items()}
    largest = max(kept, key=lambda d: kept[d])
    out[largest] += 100 - sum(out.values())
    return out


@dataclass(frozen=True)
class UndeployResult:
    served: Served
    outcome: str  # "undeploying" | "gone" | "failed"
    reason: str = ""


def undeploy_all(
    client: aiplatform_v1.EndpointServiceClient, served: Sequence[Served]
) -> list[UndeployResult]:
    """Asks Vertex to undeploy each (not waiting for the operations): those without traffic first, each with
    a split that moves its traffic to the models staying on its endpoint. A refusal (the service still
    finishing an earlier undeploy on that endpoint) is a failure, for a later try."""
    results = []
    leaving: set[str] = set()
    for one in sorted(served, key=lambda s: (s.traffic_percent, s.endpoint)):
        staying = [d for d in one.endpoint_ids if d not in leaving]
        split = {d: v for d, v in one.endpoint_traffic if d in staying}
        try:
            client.undeploy_model(
                endpoint=one.endpoint,
                deployed_model_id=one.deployed_model_id,
                traffic_split=traffic_without(split, staying, one.deployed_model_id),
                timeout=CALL_TIMEOUT_S,
            )
        except NOT_FOUND as err:
            results.append(UndeployResult(one, "gone", str(err)))
            continue
        except REGION_ERRORS as err:
            results.append(UndeployResult(one, "failed", str(err)))
            continue
        leaving.add(one.deployed_model_id)
        results.append(UndeployResult(one, "undeploying"))
    return results
