"""The trainer image built by Cloud Build as a Pulumi resource: typed args in, digest and ref out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi.dynamic

from infra.cloudbuild.provider import ImageBuildProvider

# The type token the engine (and the mock runtime) sees; changing it would replace every existing image.
RESOURCE_TYPE = "pulumi-python:dynamic/cloudbuild:ImageBuild"


@dataclass
class ImageBuildArgs:
    project: str
    region: str
    repository: pulumi.Input[str]
    image_name: str
    tag: str
    source_bucket: pulumi.Input[str]
    source_object: pulumi.Input[str]
    service_account: pulumi.Input[str]
    # The uploaded object's generation, pinned in the build's StorageSource (0: latest, state before the pin).
    source_generation: pulumi.Input[int] = 0
    extra_tags: list[str] = field(default_factory=list)
    # The Dockerfile's FROM images: the build records the digest each resolved to (`resolved_base_images`).
    base_images: list[str] = field(default_factory=list)
    timeout_seconds: int = 3600
    poll_interval_seconds: float = 15.0


class ImageBuild(pulumi.dynamic.Resource, module="cloudbuild", name="ImageBuild"):
    """`pulumi up` builds and pushes the image (or finds it already pushed); `digest` is known after."""

    digest: pulumi.Output[str]
    image_ref: pulumi.Output[str]
    build_name: pulumi.Output[str]
    log_url: pulumi.Output[str]
    # How the image was made, by digest: the docker builder that ran, and each FROM image as resolved.
    builder_image: pulumi.Output[str]
    resolved_base_images: pulumi.Output[list[str]]

    def __init__(self, name: str, args: ImageBuildArgs, opts: pulumi.ResourceOptions | None = None):
        props: dict[str, Any] = dict(vars(args))
        outputs = dict.fromkeys(
            ("digest", "image_ref", "build_name", "log_url", "builder_image", "resolved_base_images")
        )
        super().__init__(ImageBuildProvider(), name, {**props, **outputs}, opts)
