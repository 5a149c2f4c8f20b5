"""A trained model as a Model Registry version: typed args in, the version's outputs as attributes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi.dynamic

from infra.vertex.model import spec as model_spec
from infra.vertex.model_provider import ModelVersionProvider

# The type token the engine (and the mock runtime) sees; changing it would replace every registered version.
RESOURCE_TYPE = "pulumi-python:dynamic/vertex:ModelVersion"


@dataclass
class ModelVersionArgs:
    project: pulumi.Input[str]
    region: str
    model_id: str  # the stack's parent model: every upload is a new version of it
    display_name: str
    artifact_uri: pulumi.Input[str]  # the training job's SavedModel directory (gs://)
    serving_image: pulumi.Input[str]  # the stack's serving image (serving/), by digest
    labels: dict[str, str] = field(default_factory=dict)
    version_aliases: list[str] = field(default_factory=list)  # besides `default`, which the newest holds
    version_description: str | None = None
    service_account: pulumi.Input[str] | None = None  # reads artifact_uri; unset: Vertex's service agent


class ModelVersion(pulumi.dynamic.Resource, module="vertex", name="ModelVersion"):
    """One version of the stack's Vertex AI model; destroy deletes this version, never the others."""

    model_name: pulumi.Output[str]
    version_id: pulumi.Output[str]
    version_name: pulumi.Output[str]
    console_url: pulumi.Output[str]
    aliases: pulumi.Output[list[str]]
    create_time: pulumi.Output[str]

    def __init__(self, name: str, args: ModelVersionArgs, opts: pulumi.ResourceOptions | None = None):
        # None values left out, as Pulumi would drop them.
        props = {k: v for k, v in vars(args).items() if v is not None}
        super().__init__(ModelVersionProvider(), name, {**props, **dict.fromkeys(model_spec.OUTPUTS)}, opts)
