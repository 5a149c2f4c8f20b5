"""The `endpoint` key: serve the newest registered model version online, on an endpoint the stack owns
(infra/vertex/deployment/). Absent: no endpoint. Needs `registerModel: true` (it deploys that version).

    vertex-training:endpoint:
      machineType: n1-standard-2       # DeployedModel's MachineSpec default
      acceleratorType: NVIDIA_TESLA_T4  # optional, with acceleratorCount
      acceleratorCount: 1
      minReplicas: 1                   # billed every hour, requests or not (>= 1 in aiplatform v1)
      maxReplicas: 2                   # quota is counted on this; default minReplicas
      spot: false                      # or reservationAffinity: {type: ..., reservation: ...}, never both
      maxHourlyUsd: 1.5                # a ceiling on the deployment's hourly price at maxReplicas

The rules are the deployment resource's own (deployment/spec.py validate), run here on these keys' values so
that every problem of the key is named at once, by its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.config.reader import ConfigError, Reader, path_number, raise_all, rm_fix, set_fix, set_path_fix

KEYS = ("endpoint",)
# Config key -> the deployment's prop (maxHourlyUsd is the plan's and preview's, not the provider's).
FIELDS = {
    "machineType": "machine_type",
    "acceleratorType": "accelerator_type",
    "acceleratorCount": "accelerator_count",
    "minReplicas": "min_replica_count",
    "maxReplicas": "max_replica_count",
    "spot": "spot",
    "reservationAffinity": "reservation_affinity",
    "maxHourlyUsd": "max_hourly_usd",
}
# aiplatform v1 MachineSpec.machine_type: "For DeployedModel this field is optional, and the default value is
# `n1-standard-2`" (machine_resources.proto, read 2026-11-29).
DEFAULT_MACHINE_TYPE = "n1-standard-2"
DOC = "docs/serving.md"


@dataclass(frozen=True)
class EndpointConfig:
    machine_type: str = DEFAULT_MACHINE_TYPE
    accelerator_type: str | None = None
    accelerator_count: int = 0
    min_replicas: int = 1
    max_replicas: int = 1
    spot: bool = False
    reservation_affinity: dict[str, Any] | None = None
    max_hourly_usd: float | None = None
    allow_unpriced_shapes: bool = False  # the stack's allowUnpricedShapes

    def deployment_args(self) -> dict[str, Any]:
        """The DeploymentArgs these keys set (None: left to the resource's default)."""
        return {
            "machine_type": self.machine_type,
            "accelerator_type": self.accelerator_type,
            "accelerator_count": self.accelerator_count or None,
            "min_replica_count": self.min_replicas,
            "max_replica_count": self.max_replicas,
            "spot": self.spot or None,
            "reservation_affinity": dict(self.reservation_affinity) if self.reservation_affinity else None,
            "max_hourly_usd": self.max_hourly_usd,
            "allow_unpriced_shapes": self.allow_unpriced_shapes or None,
        }


def _fix(field: str, example: object) -> str:
    return set_path_fix(f"endpoint.{field}", example)


def read_endpoint(read: Reader, register_model: bool, region: str) -> EndpointConfig | None:
    """The key's configuration, None when it is absent; ConfigErrors naming every problem in it."""
    value = read.map("endpoint", rm_fix("endpoint") + " and " + _fix("machineType", DEFAULT_MACHINE_TYPE))
    if value is None:
        return None
    errors: list[ConfigError] = []
    if not register_model:
        errors.append(
            ConfigError(
                "endpoint",
                "deploys the stack's registered model version, but registerModel is not true",
                set_fix("registerModel", "true") + f" (or {rm_fix('endpoint')})",
            )
        )
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        errors.append(
            ConfigError(
                "endpoint",
                f"has unknown keys {unknown}; it takes {', '.join(FIELDS)}",
                f"remove them ({DOC} lists the keys)",
            )
        )
    fields = {k: path_number(v) for k, v in value.items() if k in FIELDS}
    typed, type_errors = _typed(fields, read.bool("allowUnpricedShapes", False))
    errors += type_errors
    if not type_errors:
        errors += _resource_errors(typed, region)
    raise_all(errors)
    return typed


def _typed(fields: Mapping[str, Any], allow_unpriced: bool) -> tuple[EndpointConfig, list[ConfigError]]:
    errors = []

    def bad(field: str, problem: str, example: object) -> None:
        errors.append(ConfigError(f"endpoint.{field}", problem, _fix(field, example)))

    for field, example in (("machineType", DEFAULT_MACHINE_TYPE), ("acceleratorType", "NVIDIA_TESLA_T4")):
        if field in fields and not (isinstance(fields[field], str) and fields[field]):
            bad(field, f"must be a non-empty string, not {fields[field]!r}", example)
    for field, minimum in (("acceleratorCount", 0), ("minReplicas", 1), ("maxReplicas", 1)):
        number = fields.get(field, minimum)
        if isinstance(number, bool) or not isinstance(number, int) or number < minimum:
            bad(field, f"must be a whole number >= {minimum}, not {number!r}", max(minimum, 1))
    if not isinstance(fields.get("spot", False), bool):
        bad("spot", f"must be true or false, not {fields['spot']!r}", "false")
    hourly = fields.get("maxHourlyUsd")
    positive = isinstance(hourly, int | float) and not isinstance(hourly, bool) and hourly > 0
    if hourly is not None and not positive:
        bad("maxHourlyUsd", f"must be a positive number of US dollars, not {hourly!r}", "1.5")
    if errors:
        return EndpointConfig(), errors
    low = fields.get("minReplicas", 1)
    return (
        EndpointConfig(
            machine_type=fields.get("machineType", DEFAULT_MACHINE_TYPE),
            accelerator_type=fields.get("acceleratorType"),
            accelerator_count=fields.get("acceleratorCount", 1 if fields.get("acceleratorType") else 0),
            min_replicas=low,
            max_replicas=fields.get("maxReplicas", low),
            spot=fields.get("spot", False),
            reservation_affinity=fields.get("reservationAffinity"),
            max_hourly_usd=float(hourly) if hourly is not None else None,
            allow_unpriced_shapes=allow_unpriced,
        ),
        [],
    )


def _resource_errors(config: EndpointConfig, region: str) -> list[ConfigError]:
    """The deployment resource's own check on these values (stand-in names where the stack fills them in)."""
    from infra.vertex.deployment import spec

    location = f"projects/stand-in-project/locations/{region}"
    props = {
        "project": "stand-in-project",
        "region": region,
        "endpoint": f"{location}/endpoints/1",
        "model": f"{location}/models/m@1",
        **{k: v for k, v in config.deployment_args().items() if v is not None},
    }
    keys = {prop: key for key, prop in FIELDS.items()}
    keys["allow_unpriced_shapes"] = "maxHourlyUsd"
    errors = []
    for prop, reason in spec.validate(props):
        top = prop.split(".", 1)[0]
        key = f"endpoint.{keys.get(top, top)}"
        errors.append(ConfigError(key, reason, f"fix the value under vertex-training:endpoint ({DOC})"))
    return errors
