"""The deployment provider's props: defaults, checks, the deterministic DeployedModel id, the DeployedModel.

Facts (google/cloud/aiplatform/v1 endpoint.proto, machine_resources.proto, googleapis f8291d2b89f0, read
2026-11-29): `DeployedModel.id` is "Immutable ... 1-10 characters, and valid characters are /[0-9]/"; a
DeployedModel carries no labels, so the id is what finds ours again after an interrupted `up`.
`DedicatedResources.machine_spec` and `min_replica_count` are "Required. Immutable", `min_replica_count` "must
be greater than or equal to 1", `max_replica_count` (Immutable) defaults to it and is what quota is charged on
("max_replica_count * number of cores ... * number of GPUs per replica"); `spot` is Optional;
`MachineSpec.reservation_affinity` is "Optional. Immutable.". Spot VMs cannot consume reservations (Compute
Engine "Consume reservations", Limitations, as capacity/reservations.py cites). MutateDeployedModel may still
change the replica counts of a deployed model (endpoint_service.proto; deployment/service.py `scale`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from google.cloud import aiplatform_v1

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.capacity.reservations import Reservation, consumes, parse_affinity, reservation_failures
from infra.vertex.capacity.shape_checks import accelerator_failures
from infra.vertex.cost.serving import ServingCost, serving_cost

Failures = list[tuple[str, str]]
ENDPOINT_NAME = re.compile(r"projects/[^/]+/locations/(?P<region>[^/]+)/endpoints/[^/]+")
MODEL_VERSION = re.compile(r"projects/[^/]+/locations/(?P<region>[^/]+)/models/[^/@]+@[^/@]+")
# The inputs that name a resource in a region: their pattern, and the form a refusal asks for.
NAMED = (
    ("endpoint", ENDPOINT_NAME, "must be projects/P/locations/R/endpoints/E"),
    ("model", MODEL_VERSION, "must name one version: projects/P/locations/R/models/M@VERSION"),
)

# What the provider does, not what it serves: changing these changes nothing remote. The price limits are
# checked (check, preview) but never make a new DeployedModel.
PROVIDER_INPUTS = ("timeout_seconds", "poll_interval_seconds", "max_hourly_usd", "allow_unpriced_shapes")
# Changed on the DeployedModel as it serves (MutateDeployedModel: deployment/service.py `scale`).
REPLICA_INPUTS = ("min_replica_count", "max_replica_count")
IN_PLACE_INPUTS = (*PROVIDER_INPUTS, *REPLICA_INPUTS)
# The DeployedModel's own inputs, which name its id: a change to any but the replica counts is a new
# DeployedModel, so diff replaces (why, and in what order: deployment_provider.py).
DEPLOYED_INPUTS = (
    "project",
    "region",
    "endpoint",
    "model",
    "display_name",
    "machine_type",
    "accelerator_type",
    "accelerator_count",
    "min_replica_count",
    "max_replica_count",
    "spot",
    "reservation_affinity",
    "service_account",
)
INPUTS = (*DEPLOYED_INPUTS, *PROVIDER_INPUTS)
OUTPUTS = (
    "deployed_model_id",
    "model_version_id",
    "traffic_percent",
    "available_replicas",
    "create_time",
    "console_url",
)
DEFAULTS: dict[str, Any] = {
    "accelerator_count": 0,
    "spot": False,
    # How long create waits for DeployModel's operation (image pull, model load, replicas up) and for an
    # in-flight one of an interrupted `up`; Vertex gives no bound, so ours is generous.
    "timeout_seconds": 3600,
    "poll_interval_seconds": 15.0,
    "allow_unpriced_shapes": False,
}
# Counts: the engine hands numbers over as floats (protobuf Struct), Vertex takes int32.
WHOLE_NUMBERS = ("accelerator_count", "min_replica_count", "max_replica_count", "timeout_seconds")


def with_defaults(props: Mapping[str, Any]) -> dict[str, Any]:
    out = {**DEFAULTS, **props}
    for key in WHOLE_NUMBERS:
        value = out.get(key)
        if isinstance(value, float) and value.is_integer():
            out[key] = int(value)
    if "max_replica_count" not in props and "min_replica_count" in props:
        out["max_replica_count"] = out["min_replica_count"]
    return out


def deployed_model_id(props: Mapping[str, Any]) -> str:
    """Ten digits (no leading zero) from the inputs it is deployed with: the same inputs name the same id
    (a scale in place keeps the id it had: the stored outputs hold it)."""
    props = with_defaults(props)  # 1 and 1.0 (as the engine sends it) name the same id
    inputs = {k: props[k] for k in DEPLOYED_INPUTS if k in props}
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    digest = int(hashlib.sha256(canonical.encode()).hexdigest(), 16)
    return str(1_000_000_000 + digest % 9_000_000_000)


def resource_id(endpoint: str, deployed_id: str) -> str:
    """The Pulumi id of a deployment: its endpoint and DeployedModel id (no Google resource name exists)."""
    return f"{endpoint}/deployedModels/{deployed_id}"


def _whole(props: Mapping[str, Any], key: str, minimum: int) -> Failures:
    value = props.get(key)
    if value is None or is_unknown(value):
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        return [(key, f"{key} must be a whole number >= {minimum}, not {value!r}")]
    return []


def validate(props: Mapping[str, Any]) -> Failures:
    """(property, reason) for every input Vertex would refuse; unknown values (preview) pass."""
    failures: Failures = []

    def known(key: str) -> bool:
        return key in props and not is_unknown(props[key])

    for key in ("project", "region", "endpoint", "model", "machine_type", "min_replica_count"):
        if key not in props:
            failures.append((key, f"{key} is required"))
    hourly = props.get("max_hourly_usd")
    if known("max_hourly_usd") and (
        isinstance(hourly, bool) or not isinstance(hourly, int | float) or hourly <= 0
    ):
        failures.append(("max_hourly_usd", f"max_hourly_usd must be a positive number, not {hourly!r}"))
    for key, pattern, form in NAMED:
        if known(key) and not pattern.fullmatch(str(props[key])):
            failures.append((key, f"{key} {props[key]!r} {form}"))
    for key, pattern, _ in NAMED:
        match = pattern.fullmatch(str(props.get(key))) if known(key) else None
        if match and known("region") and match["region"] != props["region"]:
            where = f"{key} is in {match['region']}"
            failures.append((key, f"{where}, not in the deployment's region {props['region']}"))
    failures += _whole(props, "min_replica_count", 1) + _whole(props, "max_replica_count", 1)
    low, high = props.get("min_replica_count"), props.get("max_replica_count")
    if not failures and isinstance(low, int) and isinstance(high, int) and high < low:
        failures.append(("max_replica_count", f"max_replica_count {high} is below min_replica_count {low}"))
    failures += accelerator_failures("", props)
    if known("spot") and not isinstance(props["spot"], bool):
        failures.append(("spot", f"spot must be true or false, not {props['spot']!r}"))
    reservation, bad = parse_affinity("reservation_affinity", props.get("reservation_affinity"))
    failures += bad
    region = str(props["region"]) if known("region") else None
    strategy = "SPOT" if props.get("spot") is True else "STANDARD"
    failures += reservation_failures("reservation_affinity", reservation, region, strategy)
    return failures or price_failures(props)


def cost(props: Mapping[str, Any]) -> ServingCost | None:
    """The deployment's price (cost/serving.py); None while a preview leaves its shape unknown."""
    keys = ("region", "machine_type", "accelerator_type", "accelerator_count", "min_replica_count", "spot")
    shape = (*keys, "max_replica_count", "reservation_affinity")
    if any(is_unknown(props.get(k)) for k in shape) or "machine_type" not in props:
        return None
    return serving_cost(
        str(props["region"]),
        str(props["machine_type"]),
        props.get("accelerator_type") or None,
        int(props.get("accelerator_count") or 0),
        int(props["min_replica_count"]),
        int(props.get("max_replica_count") or props["min_replica_count"]),
        props.get("spot") is True,
        props["project"] if isinstance(props.get("project"), str) and props["project"] else None,
        consumes(props.get("reservation_affinity")),
    )


def price_failures(props: Mapping[str, Any]) -> Failures:
    """maxHourlyUsd held to the price at max replicas; without a sourced price, as an unpriced training shape
    under a cap: refused unless allow_unpriced_shapes (cost/limits.py's rule)."""
    ceiling = props.get("max_hourly_usd")
    found = cost(props)
    if ceiling is None or is_unknown(ceiling) or found is None:
        return []
    high = found.hourly(found.max_replicas)
    if high is not None and high > float(ceiling):
        return [
            (
                "max_hourly_usd",
                f"the deployment costs USD {high:.2f}/h at {found.max_replicas} replicas, above "
                f"max_hourly_usd USD {float(ceiling):.2f}: lower max replicas, pick a cheaper machine or "
                "raise the ceiling",
            )
        ]
    if high is None and props.get("allow_unpriced_shapes") is not True:
        return [
            (
                "max_hourly_usd",
                f"max_hourly_usd cannot be held: {found.why}; set allowUnpricedShapes: true to deploy it "
                "uncounted, or remove maxHourlyUsd (the budget's kill switch still undeploys it)",
            )
        ]
    return []


def build_deployed_model(props: Mapping[str, Any]) -> aiplatform_v1.DeployedModel:
    """The DeployedModel DeployModel takes: the model version on dedicated machines, under our id."""
    machine = aiplatform_v1.MachineSpec(machine_type=props["machine_type"])
    if props.get("accelerator_type"):
        machine.accelerator_type = props["accelerator_type"]
        machine.accelerator_count = props["accelerator_count"]
    reservation = Reservation.of(props.get("reservation_affinity"))
    if reservation is not None:
        machine.reservation_affinity = reservation.proto()
    return aiplatform_v1.DeployedModel(
        id=deployed_model_id(props),
        model=props["model"],
        display_name=props.get("display_name", ""),
        service_account=props.get("service_account", ""),
        dedicated_resources=aiplatform_v1.DedicatedResources(
            machine_spec=machine,
            min_replica_count=props["min_replica_count"],
            max_replica_count=props["max_replica_count"],
            spot=props["spot"],
        ),
    )


def console_url(endpoint: str) -> str:
    # The console's endpoint page, in the form of the model version's link (model/spec.py); not sourced.
    match = ENDPOINT_NAME.fullmatch(endpoint)
    region = match["region"] if match else ""
    project, endpoint_id = endpoint.split("/")[1], endpoint.rsplit("/", 1)[1]
    return (
        f"https://console.cloud.google.com/vertex-ai/locations/{region}/endpoints/{endpoint_id}"
        f"?project={project}"
    )
