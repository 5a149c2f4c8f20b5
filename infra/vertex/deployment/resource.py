"""A Model Registry version deployed to an endpoint: typed args in, the deployment's outputs as attributes."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi.dynamic

from infra.vertex.deployment import spec as deployment_spec
from infra.vertex.deployment_provider import DeploymentProvider

# The type token the engine (and the mock runtime) sees; changing it would replace every deployment.
RESOURCE_TYPE = "pulumi-python:dynamic/vertex:Deployment"


@dataclass
class DeploymentArgs:
    project: pulumi.Input[str]
    region: str
    endpoint: pulumi.Input[str]  # projects/P/locations/R/endpoints/E (the native AiEndpoint's id)
    model: pulumi.Input[str]  # the version to serve: projects/P/locations/R/models/M@V
    machine_type: str
    min_replica_count: int
    max_replica_count: int | None = None  # unset: min_replica_count
    accelerator_type: str | None = None
    accelerator_count: int | None = None
    spot: bool | None = None
    reservation_affinity: dict[str, str] | None = None
    display_name: str | None = None
    service_account: pulumi.Input[str] | None = None
    timeout_seconds: int | None = None
    poll_interval_seconds: float | None = None
    max_hourly_usd: float | None = None  # a ceiling on the price at max replicas (check refuses above it)
    allow_unpriced_shapes: bool | None = None  # deploy without a sourced price under max_hourly_usd


class Deployment(pulumi.dynamic.Resource, module="vertex", name="Deployment"):
    """One model version serving on an endpoint; destroy undeploys it (its nodes stop billing)."""

    deployed_model_id: pulumi.Output[str]
    model_version_id: pulumi.Output[str]
    traffic_percent: pulumi.Output[int]
    available_replicas: pulumi.Output[int]
    create_time: pulumi.Output[str]
    console_url: pulumi.Output[str]

    def __init__(self, name: str, args: DeploymentArgs, opts: pulumi.ResourceOptions | None = None):
        # The provider's snake_case props, None values left out as Pulumi would drop them.
        props = {k: v for k, v in vars(args).items() if v is not None}
        outputs = dict.fromkeys(deployment_spec.OUTPUTS)
        super().__init__(DeploymentProvider(), name, {**props, **outputs}, opts)
