"""DeploymentProvider: serves a Model Registry version on a Vertex AI endpoint. Pickled by reference into
every stack's state: keep this module's path and the class name as they are.

A change of replica counts scales the DeployedModel in place (MutateDeployedModel). Every other change but
the waits (a retraining too) replaces it: each of its other fields is Immutable or is the model itself
(endpoint.proto, machine_resources.proto) and its id is the resource's id. The replacement is created first
(Pulumi's default order) and its DeployModel takes all the traffic; then the old one, left with none, is
undeployed: no moment without a serving model, and the quota holds both for that time.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from infra.dynamic.base import SpecProvider
from infra.vertex.deployment import spec as deployment_spec
from infra.vertex.deployment.service import Deployed, DeploymentError, Endpoints


def _outputs(props: dict[str, Any], deployed: Deployed) -> dict[str, Any]:
    return {
        **{k: props[k] for k in deployment_spec.INPUTS if k in props},
        "deployed_model_id": deployed.deployed_model_id,
        "model_version_id": deployed.model_version_id,
        "traffic_percent": deployed.traffic_percent,
        "available_replicas": deployed.available_replicas,
        "create_time": deployed.create_time,
        "console_url": deployment_spec.console_url(deployed.endpoint),
    }


class DeploymentProvider(SpecProvider):
    """Create = DeployModel with all traffic (or adopt the same id); read refreshes; update scales replicas;
    delete = UndeployModel with a traffic split that removes it; other changes but the waits replace."""

    spec = deployment_spec
    log_format = "endpoint {endpoint}"

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        found = deployment_spec.cost(props)
        if found is None:
            return []
        return [
            f"costs {found.text()}",
            "maxCostUsd does not apply (a deployment has no end): the budget and its kill switch are its cap",
        ]

    def _endpoints(self, props: dict[str, Any]) -> Endpoints:
        # Made as each method starts: its deadline counts from now.
        deadline = time.time() + props["timeout_seconds"]
        say = functools.partial(self.log, props)
        return Endpoints(props["project"], props["region"], say, deadline, props["poll_interval_seconds"])

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = deployment_spec.with_defaults(props)
        deployed = self._endpoints(props).deploy(
            props["endpoint"], deployment_spec.build_deployed_model(props)
        )
        self.log(
            props,
            f"serving {deployed.model} as DeployedModel {deployed.deployed_model_id} "
            f"({deployed.traffic_percent}% of the traffic, {deployed.available_replicas} replicas up)",
        )
        id_ = deployment_spec.resource_id(props["endpoint"], deployed.deployed_model_id)
        return CreateResult(id_, _outputs(props, deployed))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # Only IN_PLACE_INPUTS reach here (diff replaces on the rest): the replica counts change remotely.
        news, before = deployment_spec.with_defaults(news), deployment_spec.with_defaults(olds)
        kept = {**olds, **{k: news[k] for k in deployment_spec.IN_PLACE_INPUTS if k in news}}
        if all(before.get(k) == news.get(k) for k in deployment_spec.REPLICA_INPUTS):
            return UpdateResult(kept)
        deployed = self._endpoints(news).scale(
            news["endpoint"], olds["deployed_model_id"], news["min_replica_count"], news["max_replica_count"]
        )
        if deployed is None:
            raise DeploymentError(
                f"DeployedModel {olds['deployed_model_id']} is no longer on {news['endpoint']}; run `pulumi "
                "refresh`, then `pulumi up` to deploy the model again."
            )
        self.log(news, f"DeployedModel {deployed.deployed_model_id} scaled: {deployed.available_replicas} up")
        return UpdateResult({**kept, **_outputs(news, deployed)})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        props = deployment_spec.with_defaults(props)
        deployed = self._endpoints(props).find(props["endpoint"], props["deployed_model_id"])
        if deployed is None:
            return ReadResult("", {})
        return ReadResult(id_, _outputs(props, deployed))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        props = deployment_spec.with_defaults(props)
        gone = not self._endpoints(props).undeploy(props["endpoint"], props["deployed_model_id"])
        self.log(
            props,
            f"DeployedModel {props['deployed_model_id']} "
            + ("was gone already" if gone else "undeployed: its nodes no longer bill"),
        )
