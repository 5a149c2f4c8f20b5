"""A batch prediction's machine, replica and image rules on typed values, run by spec.py `validate` and by the
stack's configuration (infra/config/batch_prediction.py); each failure names its BatchPredictionJob field."""

from __future__ import annotations

from infra.vertex.capacity.placement import Shape
from infra.vertex.capacity.reservations import reservation_failures
from infra.vertex.capacity.shape_checks import Failures, machine_failures
from infra.vertex.lifecycle.checks import whole_number_value_failures

# "Your input and output must also be in the same region or multi-region as your model." (Vertex AI, Get
# batch predictions from a custom trained model, Limitations and requirements, read 2026-11-27.)
SAME_REGION_DOC = "https://cloud.google.com/vertex-ai/docs/predictions/get-batch-predictions"
STRATEGY = "STANDARD"  # BatchDedicatedResources has no scheduling


def machine_type_failures(machine_type: object) -> Failures:
    """The job's own machine type, required."""
    if not isinstance(machine_type, str) or not machine_type:
        return [("machine_type", "machine_type is required, e.g. n1-standard-4")]
    return []


def primary_failures(shape: Shape) -> Failures:
    """The job's own shape: its machine's GPU fit, then its reservation in its region."""
    return machine_failures("", shape) + reservation_failures(
        "reservation_affinity", shape.reservation, shape.region or None, STRATEGY
    )


def fallback_failures(where: str, shape: Shape, home: str | None, own_reservation: bool) -> Failures:
    """A resolved fallback (placement.resolve): no other region, its machine's GPU fit (named by the entry)
    and the reservation it names (`own_reservation`; an inherited one is the job's, checked there)."""
    failures: Failures = []
    if home and shape.region and shape.region != home:
        # The job's images, instances file and output stay in the home region's bucket, and Google requires
        # them in the model's (the job's) region.
        failures.append(
            (
                f"{where}.region",
                f"{where}.region {shape.region} differs from the job's region {home}: a batch prediction's "
                f"input and output must be in the same region as its model ({SAME_REGION_DOC}), and they are "
                f"in {home}'s bucket. Drop the region from this fallback (other machines in the same region "
                "are fine), or run a separate batch prediction in that region with its own images, output "
                "and model there",
            )
        )
    failures += [(where, reason) for _key, reason in machine_failures(where, shape)]
    if own_reservation:
        failures += reservation_failures(where, shape.reservation, shape.region or home or None, STRATEGY)
    return failures


def replica_failures(starting: object, most: object) -> Failures:
    """starting_replica_count and max_replica_count: whole numbers >= 1, the first no more than the second
    (Vertex scales between them)."""
    failures = whole_number_value_failures("starting_replica_count", starting, 1)
    failures += whole_number_value_failures("max_replica_count", most, 1)
    if not failures and isinstance(starting, int) and isinstance(most, int) and starting > most:
        failures.append(
            (
                "max_replica_count",
                f"max_replica_count ({most}) is below starting_replica_count ({starting}): Vertex scales "
                "between them",
            )
        )
    return failures


def images_failures(images: str, runner: str) -> Failures:
    """`images`: required, a gs:// prefix on the vertex runner (a local folder for local)."""
    if not images:
        return [("images", "images is required: a gs:// prefix of JPEG/PNG files (a local folder for local)")]
    if runner == "vertex" and not images.startswith("gs://"):
        return [
            (
                "images",
                f"images {images!r} must be a gs:// prefix for the vertex runner (Vertex reads the files "
                "from Cloud Storage); use runner local for a local folder",
            )
        ]
    return []
