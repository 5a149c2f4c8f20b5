"""Pure functions over the model-version provider's props: defaults, checks, key label and the Vertex Model.
One parent model per stack (`model_id`); each trained model directory is uploaded as a new version of it."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from google.cloud import aiplatform_v1

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.lifecycle.checks import KEY_LABEL, label_failures
from infra.vertex.serving_container import container_spec

# The alias Vertex resolves a model name without a version to; it follows the newest upload here.
DEFAULT_ALIAS = "default"
# UploadModelRequest.model_id: up to 63 of [a-z0-9_-], not starting with a digit or hyphen.
_MODEL_ID = re.compile(r"[a-z_][a-z0-9_-]{0,62}")
# Model.version_aliases: [a-z][a-zA-Z0-9-]{0,126}[a-z0-9], and not only digits.
_ALIAS = re.compile(r"[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]")

# Every change uploads a new version: nothing changes in place.
IN_PLACE_INPUTS: tuple[str, ...] = ()
INPUTS = (
    "project",
    "region",
    "model_id",
    "display_name",
    "artifact_uri",
    "serving_image",
    "labels",
    "version_aliases",
    "version_description",
    "service_account",
)
OUTPUTS = ("model_name", "version_id", "version_name", "console_url", "aliases", "create_time")
DEFAULTS: dict[str, Any] = {"labels": {}, "version_aliases": [], "version_description": ""}


def with_defaults(props: Mapping[str, Any]) -> dict[str, Any]:
    return {**DEFAULTS, **props}


def model_key(props: Mapping[str, Any]) -> str:
    """Deterministic label value naming this version's inputs: the same inputs find the same version."""
    inputs = {k: props[k] for k in INPUTS if k in props}
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:40]


def validate(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(property, reason) for every input Vertex would refuse; unknown values (preview) pass."""
    failures: list[tuple[str, str]] = []

    def known(key: str) -> bool:
        return key in props and not is_unknown(props[key])

    for key in ("project", "region", "model_id", "display_name", "artifact_uri", "serving_image"):
        if key not in props:
            failures.append((key, f"{key} is required"))
    if known("model_id") and not _MODEL_ID.fullmatch(str(props["model_id"])):
        failures.append(
            (
                "model_id",
                f"model_id {props['model_id']!r} is invalid: up to 63 lowercase letters, digits, '_' or '-', "
                "not starting with a digit or '-'",
            )
        )
    if known("artifact_uri") and not str(props["artifact_uri"]).startswith("gs://"):
        failures.append(
            ("artifact_uri", f"artifact_uri {props['artifact_uri']!r} must be a gs:// model directory")
        )
    if known("display_name") and not 0 < len(str(props["display_name"])) <= 128:
        failures.append(("display_name", "display_name must be 1 to 128 characters"))
    if known("version_aliases"):
        for alias in props["version_aliases"]:
            if not is_unknown(alias) and not _ALIAS.fullmatch(str(alias)):
                failures.append(
                    (
                        "version_aliases",
                        f"alias {alias!r} is invalid: a lowercase letter, then letters, digits or '-', "
                        "ending in a lowercase letter or digit (2 to 128 characters)",
                    )
                )
    if known("labels"):
        failures.extend(label_failures(props["labels"], reserved=(KEY_LABEL,)))
    return failures


def build_model(props: Mapping[str, Any]) -> aiplatform_v1.Model:
    """The Model version to upload: the trainer's model directory, served by the stack's serving image."""
    return aiplatform_v1.Model(
        display_name=props["display_name"],
        artifact_uri=props["artifact_uri"],
        container_spec=container_spec(props["serving_image"]),
        labels={**props["labels"], KEY_LABEL: model_key(props)},
        # `default` goes with the upload, as google-cloud-aiplatform 2.7.0's Model.upload sends it with
        # is_default_version=True (models.py, ModelRegistry._get_true_alias_list): Vertex moves it to the new
        # version. Other aliases are moved by MergeVersionAliases afterwards: an alias names one version.
        version_aliases=[DEFAULT_ALIAS],
        version_description=props["version_description"],
    )


def console_url(project: str, region: str, model_id: str, version_id: str) -> str:
    # The version page as google-cloud-aiplatform 2.7.0 links it (utils/_ipython_utils.py).
    return (
        f"https://console.cloud.google.com/vertex-ai/models/locations/{region}/models/{model_id}"
        f"/versions/{version_id}?project={project}"
    )
