"""The `batchPrediction` key: after training, classify a folder or bucket prefix of images with the trained
model (a BatchPredictionJob, infra/vertex/batch/). Absent: no batch prediction.

    vertex-training:batchPrediction:
      images: gs://my-bucket/to-classify/     # a local folder for the local runner
      machineType: n1-standard-4             # and acceleratorType / acceleratorCount
      startingReplicaCount: 1
      maxReplicaCount: 2
      fallbacks: [{machineType: n1-highmem-8}]  # machineType, acceleratorType, acceleratorCount (the job's
                                             # region only: batch/machines.py SAME_REGION_DOC)
      timeoutSeconds: 3600                   # default: the stack's timeoutSeconds
      reservationAffinity: {type: SPECIFIC_RESERVATION, reservation: projects/P/zones/Z/reservations/N}

The machine, replica and image rules are the resource's own (batch/machines.py, which batch/spec.py validate
runs too), applied here on the shapes these keys make so that a stack error names the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.config.reader import ConfigError, Reader, path_number, rm_fix, set_path_fix

KEYS = ("batchPrediction",)
# Config key -> the batch prediction's prop.
FIELDS = {
    "images": "images",
    "machineType": "machine_type",
    "acceleratorType": "accelerator_type",
    "acceleratorCount": "accelerator_count",
    "startingReplicaCount": "starting_replica_count",
    "maxReplicaCount": "max_replica_count",
    "timeoutSeconds": "timeout_seconds",
    "reservationAffinity": "reservation_affinity",
    "fallbacks": "fallbacks",
}
FALLBACK_FIELDS = {
    "machineType": "machine_type",
    "acceleratorType": "accelerator_type",
    "acceleratorCount": "accelerator_count",
    "region": "region",
    "reservationAffinity": "reservation_affinity",
}
_EXAMPLE = "gs://my-bucket/to-classify/"


@dataclass(frozen=True)
class BatchPredictionConfig:
    images: str
    machine_type: str = "n1-standard-4"
    accelerator_type: str | None = None
    accelerator_count: int = 0
    starting_replica_count: int = 1
    max_replica_count: int = 1
    timeout_seconds: int = 3600
    fallbacks: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    reservation_affinity: dict[str, Any] | None = None

    def job_args(self) -> dict[str, Any]:
        """The BatchPredictionArgs these keys set."""
        return {
            "images": self.images,
            "machine_type": self.machine_type,
            "accelerator_type": self.accelerator_type,
            "accelerator_count": self.accelerator_count,
            "starting_replica_count": self.starting_replica_count,
            "max_replica_count": self.max_replica_count,
            "timeout_seconds": self.timeout_seconds,
            "fallbacks": [dict(f) for f in self.fallbacks] or None,
            "reservation_affinity": dict(self.reservation_affinity) if self.reservation_affinity else None,
        }


def _fallback(index: int, entry: Any) -> dict[str, Any]:
    key = f"batchPrediction.fallbacks[{index}]"
    if not isinstance(entry, Mapping) or set(entry) - set(FALLBACK_FIELDS):
        raise ConfigError(
            key,
            f"must be a map of {', '.join(FALLBACK_FIELDS)}, got {entry!r}",
            rm_fix(key, path=True) + " and " + set_path_fix(f"{key}.machineType", "n1-highmem-8"),
        )
    return {FALLBACK_FIELDS[k]: path_number(v) for k, v in entry.items()}


def read_batch_prediction(
    read: Reader, runner: str, region: str, timeout_seconds: int, root: Path
) -> BatchPredictionConfig | None:
    value = read.map(
        "batchPrediction",
        rm_fix("batchPrediction") + " and " + set_path_fix("batchPrediction.images", _EXAMPLE),
    )
    if value is None:
        return None
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise ConfigError(
            "batchPrediction",
            f"has unknown keys {unknown}; it takes {', '.join(FIELDS)}",
            "remove them (docs/batch-prediction.md lists the keys)",
        )
    images = value.get("images")
    if not isinstance(images, str) or not images:
        raise ConfigError(
            "batchPrediction.images",
            "is required: the gs:// prefix (or, for the local runner, the folder) of the JPEG/PNG images",
            set_path_fix("batchPrediction.images", _EXAMPLE),
        )
    if runner == "local" and not images.startswith("gs://") and not Path(images).expanduser().is_absolute():
        images = str(root / images)  # relative to the repository root, as localDir is
    numbers = {
        k: path_number(value[k])
        for k in FIELDS
        if k in value and k not in ("images", "fallbacks", "reservationAffinity")
    }
    fallbacks = value.get("fallbacks") or []
    if not isinstance(fallbacks, list):
        raise ConfigError(
            "batchPrediction.fallbacks",
            "must be a list of shapes",
            rm_fix("batchPrediction.fallbacks", path=True)
            + " and "
            + set_path_fix("batchPrediction.fallbacks[0].machineType", "n1-highmem-8"),
        )
    config = BatchPredictionConfig(
        images=images,
        machine_type=numbers.get("machineType", "n1-standard-4"),
        accelerator_type=numbers.get("acceleratorType"),
        accelerator_count=numbers.get("acceleratorCount", 0),
        starting_replica_count=numbers.get("startingReplicaCount", 1),
        max_replica_count=numbers.get("maxReplicaCount", numbers.get("startingReplicaCount", 1)),
        timeout_seconds=numbers.get("timeoutSeconds", timeout_seconds),
        fallbacks=tuple(_fallback(i, entry) for i, entry in enumerate(fallbacks)),
        reservation_affinity=value.get("reservationAffinity"),
    )
    _check(config, runner, region)
    return config


def _check(config: BatchPredictionConfig, runner: str, region: str) -> None:
    """The resource's own rules (batch/machines.py) on these keys' values and shapes, the first problem named
    by its key."""
    keys = {prop: key for key, prop in FIELDS.items()}
    for prop, reason in _failures(config, runner, region)[:1]:
        top = prop.split(".", 1)[0].split("[", 1)[0]
        raise ConfigError(
            f"batchPrediction.{keys[top]}{prop[len(top) :]}",
            reason,
            "fix the value under vertex-training:batchPrediction (docs/batch-prediction.md)",
        )


def _failures(config: BatchPredictionConfig, runner: str, region: str) -> list[tuple[str, str]]:
    """The problems in the order the resource's check finds them: the timeout, the images, the replicas, the
    machine, then the job's shape and each fallback's."""
    from infra.vertex.batch import machines
    from infra.vertex.capacity.placement import Shape
    from infra.vertex.capacity.reservations import parse_affinity
    from infra.vertex.capacity.shape_checks import count_failures, fallback_shape
    from infra.vertex.lifecycle.checks import timeout_failures

    failures = timeout_failures(config.timeout_seconds) + machines.images_failures(config.images, runner)
    failures += machines.replica_failures(config.starting_replica_count, config.max_replica_count)
    failures += machines.machine_type_failures(config.machine_type) or count_failures(
        "", config.accelerator_count
    )
    if failures:
        return failures
    reservation, bad = parse_affinity("reservation_affinity", config.reservation_affinity)
    primary = Shape(
        config.machine_type,
        config.accelerator_type or None,
        config.accelerator_count,
        machines.STRATEGY,
        region,
        reservation,
    )
    failures = machines.primary_failures(primary) + bad
    for index, entry in enumerate(config.fallbacks):
        where = f"fallbacks[{index}]"
        bad, shape = fallback_shape(where, entry, primary)
        own = "reservation_affinity" in entry
        failures += bad if shape is None else machines.fallback_failures(where, shape, region, own)
    return failures
