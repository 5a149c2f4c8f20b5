"""Online serving: the stack's endpoint (the native `gcp.vertex.AiEndpoint`) and the newest registered model
version deployed to it (the Deployment dynamic resource), when `vertex-training:endpoint` is set."""

from __future__ import annotations

import hashlib

import pulumi
import pulumi_gcp as gcp

from infra.components.options import children
from infra.config import StackConfig
from infra.vertex.deployment.resource import Deployment, DeploymentArgs
from infra.vertex.model.resource import ModelVersion


def endpoint_id(pulumi_project: str, stack: str, region: str) -> str:
    """The endpoint's id: digits from the stack, so a second `up` names the same endpoint. Nine digits, no
    leading zero: CreateEndpointRequest.endpoint_id takes "up to 9 characters" when it starts with a number
    (endpoint_service.proto); the AiEndpoint resource's `name` takes "at most 10 digits"."""
    digest = int(hashlib.sha256(f"{pulumi_project}/{stack}/{region}".encode()).hexdigest(), 16)
    return str(100_000_000 + digest % 900_000_000)


class OnlineEndpoint(pulumi.ComponentResource):
    """The endpoint and the deployment on it; the deployment depends on the endpoint, so `destroy` undeploys
    the model before it deletes the endpoint, and a retraining deploys the new version before it undeploys
    the old one (deployment_provider.py)."""

    def __init__(
        self,
        name: str,
        *,
        cfg: StackConfig,
        version: ModelVersion,
        labels: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:stack:OnlineEndpoint", name, None, opts)
        assert cfg.endpoint is not None
        self.endpoint = gcp.vertex.AiEndpoint(
            "endpoint",
            name=endpoint_id(pulumi.get_project(), cfg.stack, cfg.region),
            display_name=f"{pulumi.get_project()}-{cfg.stack}",
            description="The stack's model, served online (vertex-training:endpoint).",
            location=cfg.region,
            region=cfg.region,
            project=cfg.gcp_project,
            labels=labels,
            # The deployment sets the split (all traffic to the newest version): the endpoint never resets it.
            opts=children(self, opts, ignore_changes=["trafficSplit"]),
        )
        endpoint_name = pulumi.Output.all(
            self.endpoint.project, self.endpoint.location, self.endpoint.name
        ).apply(lambda p: f"projects/{p[0]}/locations/{p[1]}/endpoints/{p[2]}")
        self.deployment = Deployment(
            "deployment",
            DeploymentArgs(
                project=cfg.gcp_project,
                region=cfg.region,
                endpoint=endpoint_name,
                model=version.version_name,
                display_name=cfg.model_registry.display_name,
                **cfg.endpoint.deployment_args(),
            ),
            opts=children(self, opts, depends_on=[self.endpoint, version]),
        )
        self.endpoint_name = endpoint_name
        self.register_outputs(
            {"endpoint_name": endpoint_name, "deployed_model_id": self.deployment.deployed_model_id}
        )


def serving_outputs(online: OnlineEndpoint | None) -> dict[str, pulumi.Input]:
    """`endpoint_name` and `deployed_model_id` when the stack serves; nothing otherwise."""
    if online is None:
        return {}
    return {"endpoint_name": online.endpoint_name, "deployed_model_id": online.deployment.deployed_model_id}
