"""Pure functions over a batch prediction's props: defaults, validation, key and the BatchPredictionJob."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from google.cloud import aiplatform_v1

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.batch import machines
from infra.vertex.batch.instances import KEY_FIELD
from infra.vertex.capacity import placement, reservations
from infra.vertex.capacity.shape_checks import count_failures, fallback_shape
from infra.vertex.cost import limits
from infra.vertex.lifecycle import checks
from infra.vertex.lifecycle.props import SHARED_OUTPUTS
from infra.vertex.lifecycle.request import Common
from infra.vertex.serving_container import container_spec

# The shape keys a batch prediction's fallbacks may change: its machine (and its reservation: the
# MachineSpec of BatchDedicatedResources has `reservation_affinity`, "Optional. Immutable.",
# machine_resources.proto, read 2026-11-27); no Spot nor FLEX_START (BatchDedicatedResources has no
# scheduling); `region` only the job's own (machines.SAME_REGION_DOC).
SHAPE_KEYS = ("machine_type", "accelerator_type", "accelerator_count", "region", "reservation_affinity")
IN_PLACE_INPUTS = frozenset(
    {
        "wait",
        "poll_interval_seconds",
        "queue_timeout_seconds",
        "fallbacks",
        "max_cost_usd",
        "max_hourly_usd",
        "allow_unpriced_shapes",
    }
)
# A fallback entry: a shape, and the hourly ceiling of that shape (cost/limits.py).
FALLBACK_KEYS = (*SHAPE_KEYS, *limits.FALLBACK_LIMIT_KEYS)
INPUTS = (
    "project",
    "region",
    "display_name",
    "labels",
    "service_account",
    "runner",
    "wait",
    "poll_interval_seconds",
    "queue_timeout_seconds",
    "timeout_seconds",
    "max_cost_usd",
    "fallbacks",
    "machine_type",
    "accelerator_type",
    "accelerator_count",
    "starting_replica_count",
    "max_replica_count",
    "reservation_affinity",
    "model",
    "artifact_uri",
    "serving_image",
    "images",
    "output_dir",
    "max_hourly_usd",
    "allow_unpriced_shapes",
)
OUTPUTS = (
    *SHARED_OUTPUTS,
    "duration_seconds",
    "estimated_cost_usd",
    "cost_cap_reached",
    "predictions_dir",
    "completion_stats",
)
DEFAULTS: dict[str, Any] = {
    "region": "",  # the local runner ignores it; the vertex runner requires it (checks.common_failures)
    "labels": {},
    "wait": True,
    "poll_interval_seconds": 30.0,
    "runner": "vertex",
    "queue_timeout_seconds": 3600,
    "machine_type": "n1-standard-4",
    "accelerator_count": 0,
    "starting_replica_count": 1,
}
# Field behaviours are aiplatform_v1's (google/cloud/aiplatform/v1/batch_prediction_job.proto, as the pinned
# google-cloud-aiplatform documents them, read 2026-11-26 and 2026-11-27): exactly one of `model` and
# `unmanaged_container_model`; `input_config.instances_format` one of the model's supported formats: here
# `jsonl`, one object per image keyed by its URI (instances.py), with `InstanceConfig.instance_type` "object"
# ("For `jsonl`, each line of the JSONL input must be an object") and `key_field` "key", so each output line
# names its image and carries no image bytes; no `excluded_fields`: a field named there is not sent to the
# Model, and the model needs the bytes (InstanceConfig); `output_config.gcs_destination` gets a new directory
# `prediction-<model-display-name>-<job-create-time>` (OutputInfo.gcs_output_directory); and
# BatchDedicatedResources' `machine_spec` ("Required. Immutable."), `starting_replica_count` and
# `max_replica_count` ("The default value is 10"; both Immutable). No running-time cap: kind.py's.
INSTANCES_FORMAT = "jsonl"
INSTANCE_TYPE = "object"
PREDICTIONS_FORMAT = "jsonl"
INSTANCES_FILE = "instances.jsonl"  # written into output_dir before the job is submitted (kind.py)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
# A Model Registry name, full or the model id alone, with an optional @version id or alias.
_MODEL = re.compile(r"(?:projects/[^/@]+/locations/([^/@]+)/models/)?([A-Za-z0-9_-]+)(@[A-Za-z0-9_-]+)?")


def with_defaults(props: Mapping[str, Any]) -> dict[str, Any]:
    """Props with the defaults filled in; max_replica_count defaults to starting_replica_count (so the job
    bills no more machines than it starts with unless asked)."""
    out = {**DEFAULTS, **{k: checks.whole_numbers_as_int(v) for k, v in props.items() if v is not None}}
    out.setdefault("max_replica_count", out["starting_replica_count"])
    return out


def job_key(props: Mapping[str, Any]) -> str:
    return checks.job_key(props, INPUTS, IN_PLACE_INPUTS)


def validate(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem with the (defaulted) props as (property, reason); unknown preview values are skipped.
    The machine, replica and image rules are machines.py's, on the values read here."""
    failures = checks.common_failures(props, "output_dir") + _model_failures(props)
    images, runner = props.get("images"), str(props.get("runner"))
    if not is_unknown(images):
        failures += machines.images_failures(images if isinstance(images, str) else "", runner)
    failures += _replica_failures(props)
    machine = props.get("machine_type")
    if not is_unknown(machine) and (bad := machines.machine_type_failures(machine)):
        return failures + bad
    failures += _shape_failures(props) + limits.value_failures(props)
    return failures or limits.failures(props, body(props).pools)


def _shape_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The job's own shape and each fallback, read from the props, under machines.py's rules (once a
    preview's machine and region are known)."""
    if any(is_unknown(props.get(k)) for k in (*placement.MACHINE_KEYS, "region")):
        return []
    reservation, bad = reservations.parse_affinity("reservation_affinity", props.get("reservation_affinity"))
    if count := count_failures("", props.get("accelerator_count", 0)):  # no shape: its reservation alone
        region = str(props.get("region") or "") or None
        return count + (
            bad
            or reservations.reservation_failures(
                "reservation_affinity", reservation, region, machines.STRATEGY
            )
        )
    primary = replace(placement.primary_shape(props, body(props).pools), reservation=reservation)
    failures = machines.primary_failures(primary) + bad  # no reservation when its form is refused
    fallbacks = props.get("fallbacks", [])
    if is_unknown(fallbacks) and not isinstance(fallbacks, list):
        return failures
    if not isinstance(fallbacks, list):
        return [*failures, ("fallbacks", "fallbacks must be a list of shapes (maps)")]
    for index, entry in enumerate(fallbacks):
        failures += _fallback_failures(f"fallbacks[{index}]", entry, primary)
    return failures


def _fallback_failures(where: str, entry: Any, primary: placement.Shape) -> list[tuple[str, str]]:
    """One fallback entry: its form here, then machines.fallback_failures on its shape (placement.resolve)."""
    if is_unknown(entry):
        return []
    if not isinstance(entry, Mapping) or set(entry) - set(FALLBACK_KEYS):
        return [(where, f"{where} must be a map of {', '.join(FALLBACK_KEYS)}")]
    bad, shape = fallback_shape(where, entry, primary)
    if shape is None:
        return bad
    return machines.fallback_failures(where, shape, primary.region, "reservation_affinity" in entry)


def _model_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    model, artifact = props.get("model"), props.get("artifact_uri")
    if is_unknown(model) or is_unknown(artifact):
        return []
    if (model is None) == (artifact is None):
        both = "both are set" if model is not None else "neither is set"
        return [
            (
                "model" if model is not None else "artifact_uri",
                f"give exactly one of model (a Model Registry name, optionally @version) and artifact_uri "
                f"(a SavedModel directory): {both}",
            )
        ]
    local = props.get("runner") == "local"
    if model is not None:
        if local:
            return [
                (
                    "model",
                    "model names a Model Registry version, which only the vertex runner reads; give "
                    "artifact_uri (the SavedModel directory) for runner local",
                )
            ]
        found = _MODEL.fullmatch(model) if isinstance(model, str) else None
        if found is None:
            return [
                (
                    "model",
                    f"model must be a Model Registry name (projects/P/locations/R/models/M or M, optionally "
                    f"@version or @alias), not {model!r}",
                )
            ]
        if found[1] and isinstance(props.get("region"), str) and found[1] != props["region"]:
            return [("model", f"model is in {found[1]}, but the job runs in region {props['region']}")]
        return []
    if not isinstance(artifact, str) or not artifact:
        return [
            ("artifact_uri", "artifact_uri must be the SavedModel directory (gs:// or, for local, a path)")
        ]
    if not local and not artifact.startswith("gs://"):
        return [("artifact_uri", f"artifact_uri {artifact!r} must be a gs:// URI for the vertex runner")]
    image = props.get("serving_image")
    if not local and not is_unknown(image) and not (isinstance(image, str) and image):
        return [("serving_image", "serving_image (the image that serves artifact_uri) is required with it")]
    return []


def _replica_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    start, most = props.get("starting_replica_count"), props.get("max_replica_count")
    if is_unknown(start) or is_unknown(most):  # a preview's: each known one on its own
        failures = checks.whole_number_failures(props, "starting_replica_count", 1)
        return failures + checks.whole_number_failures(props, "max_replica_count", 1)
    return machines.replica_failures(start, most)


def build_job(inputs: Inputs, key: str) -> aiplatform_v1.BatchPredictionJob:
    """The BatchPredictionJob of a typed request on its shape (the lifecycle's Placed.body)."""
    machines = inputs.machine
    machine = aiplatform_v1.MachineSpec(machine_type=machines.machine_type)
    if machines.accelerator_type and machines.accelerator_count:
        machine.accelerator_type = aiplatform_v1.AcceleratorType[machines.accelerator_type]  # type: ignore[misc]
        machine.accelerator_count = machines.accelerator_count
    if inputs.reservation is not None:
        machine.reservation_affinity = inputs.reservation.proto()
    job = aiplatform_v1.BatchPredictionJob(
        display_name=inputs.common.display_name,
        input_config=aiplatform_v1.BatchPredictionJob.InputConfig(
            instances_format=INSTANCES_FORMAT,
            gcs_source=aiplatform_v1.GcsSource(uris=[inputs.instances_uri]),
        ),
        instance_config=aiplatform_v1.BatchPredictionJob.InstanceConfig(
            instance_type=INSTANCE_TYPE, key_field=KEY_FIELD
        ),
        output_config=aiplatform_v1.BatchPredictionJob.OutputConfig(
            predictions_format=PREDICTIONS_FORMAT,
            gcs_destination=aiplatform_v1.GcsDestination(output_uri_prefix=inputs.common.output_dir),
        ),
        dedicated_resources=aiplatform_v1.BatchDedicatedResources(
            machine_spec=machine,
            starting_replica_count=inputs.starting_replica_count,
            max_replica_count=inputs.max_replica_count,
        ),
        service_account=inputs.common.service_account,
        labels={**inputs.common.labels, checks.KEY_LABEL: key},
    )
    if inputs.model:
        job.model = inputs.model_name
    else:
        job.unmanaged_container_model = aiplatform_v1.UnmanagedContainerModel(
            # The local runner runs serving/ from this checkout: no image (check requires one on Vertex).
            artifact_uri=inputs.artifact_uri,
            container_spec=container_spec(inputs.serving_image),
        )
    return job


@dataclass(frozen=True)
class Inputs:
    """A batch job's whole request (JobRequest.body), typed: its machine and replicas, the model, the images
    it classifies and where the instances file and the predictions go."""

    common: Common  # its timeout_seconds: the provider's cap (the request has none)
    machine: placement.Pool  # up to max_replica_count replicas, priced as a prediction machine
    reservation: reservations.Reservation | None
    starting_replica_count: int
    max_replica_count: int
    model: str  # a Model Registry name (full or the id alone), or "": artifact_uri
    artifact_uri: str
    images: str  # a local folder or gs:// prefix
    serving_image: str  # the stack's serving image ("": the local runner runs serving/ from this checkout)

    @property
    def pools(self) -> tuple[placement.Pool, ...]:
        return (self.machine,)

    @property
    def instances_uri(self) -> str:
        return self.common.output_dir.rstrip("/") + "/" + INSTANCES_FILE

    @property
    def model_name(self) -> str:
        """The full Model Registry name of `model` (a bare id is in the job's project and region)."""
        if self.model.startswith("projects/"):
            return self.model
        return f"projects/{self.common.project}/locations/{self.common.region}/models/{self.model}"

    def on(self, shape: placement.Shape) -> Inputs:
        """The request on `shape`: its machine and reservation (its region: the same, machines.py)."""
        (machine,) = placement.shaped_pools(self.pools, shape)
        return replace(self, common=self.common.on(shape), machine=machine, reservation=shape.reservation)


def body(props: Mapping[str, Any]) -> Inputs:
    """The kind's whole request from the (defaulted) props, parsed once by JobRequest.parse (outputs stored
    by an earlier version may lack a key: a delete still parses them)."""
    start = int(props.get("starting_replica_count") or 1)
    most = int(props.get("max_replica_count") or start)
    return Inputs(
        common=Common.of(props, "output_dir"),
        machine=placement.Pool(
            machine_type=str(props.get("machine_type") or ""),
            accelerator_type=props.get("accelerator_type") or None,
            accelerator_count=int(props.get("accelerator_count") or 0),
            replica_count=most,
            prediction=True,
        ),
        reservation=reservations.Reservation.of(props.get("reservation_affinity")),
        starting_replica_count=start,
        max_replica_count=most,
        model=str(props.get("model") or ""),
        artifact_uri=str(props.get("artifact_uri") or ""),
        images=str(props.get("images") or ""),
        serving_image=str(props.get("serving_image") or ""),
    )
