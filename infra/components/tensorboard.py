"""An optional Vertex AI TensorBoard instance the training job streams its logs to."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from infra.components.options import children


def console_url(project: str, region: str) -> str:
    return f"https://console.cloud.google.com/vertex-ai/experiments/tensorboard-instances?project={project}&region={region}"


class Tensorboard(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        *,
        project: str,
        region: str,
        stack: str,
        labels: dict[str, str],
        protect: bool,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:stack:Tensorboard", name, None, opts)
        self.instance = gcp.vertex.AiTensorboard(
            "tensorboard",
            project=project,
            region=region,
            display_name=f"vertex-training-{stack}",
            description="Training curves of this stack's jobs (managed by Pulumi).",
            labels=labels,
            opts=children(self, opts, protect=protect),
        )
        self.name = self.instance.name
        self.url = console_url(project, region)
        self.register_outputs({"name": self.name, "url": self.url})
