"""The trained model as the newest version of the stack's Vertex AI model (Model Registry), after training."""

from __future__ import annotations

import pulumi

from infra.components.options import children
from infra.config import StackConfig
from infra.guard.deployed_models import stack_model_id
from infra.vertex.model.resource import ModelVersion, ModelVersionArgs


class RegisteredModel(pulumi.ComponentResource):
    """Uploads the training job's SavedModel once the job succeeded, served by the stack's serving image, as
    the job's identity (which already reads the bucket: no new grant); a protected stack keeps its versions
    in the Registry (retained). A new serving image uploads a new version, as a retraining does."""

    def __init__(
        self,
        name: str,
        *,
        cfg: StackConfig,
        model_dir: pulumi.Input[str],
        serving_image: pulumi.Input[str],
        reader: pulumi.Input[str],
        labels: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:stack:RegisteredModel", name, None, opts)
        self.version = ModelVersion(
            "model",
            ModelVersionArgs(
                project=cfg.gcp_project,
                region=cfg.region,
                model_id=stack_model_id(pulumi.get_project(), cfg.stack),
                display_name=cfg.model_registry.display_name,
                artifact_uri=model_dir,
                serving_image=serving_image,
                labels=labels,
                version_aliases=list(cfg.model_registry.version_aliases),
                service_account=reader,
            ),
            # Not `protect`: every retraining changes artifact_uri, which replaces the version, and Pulumi
            # refuses to replace a protected resource. retain_on_delete lets the replace (and destroy) drop
            # the old version from state while Vertex keeps it: prod keeps its history.
            opts=children(self, opts, retain_on_delete=cfg.protect),
        )
        self.register_outputs({"version_name": self.version.version_name})


def model_outputs(model: RegisteredModel | None) -> dict[str, pulumi.Input]:
    """The registered version (empty strings when the stack registers none)."""
    if model is None:
        return {"model_name": "", "model_version_id": "", "model_console_url": ""}
    return {
        "model_name": model.version.model_name,
        "model_version_id": model.version.version_id,
        "model_console_url": model.version.console_url,
    }
