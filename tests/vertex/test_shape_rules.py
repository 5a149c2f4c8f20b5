"""The shape rules on typed values (capacity/shape_checks.py, capacity/reservations.py, custom_job/chain.py,
batch/machines.py): what the kinds' checks and the stack's configuration both run, checked on Shapes."""

from __future__ import annotations

import pytest

from infra.vertex.batch import machines as batch
from infra.vertex.capacity.placement import Shape
from infra.vertex.capacity.reservations import Reservation, parse_affinity, reservation_failures
from infra.vertex.capacity.shape_checks import (
    count_failures,
    entry_failures,
    fallback_shape,
    machine_failures,
)
from infra.vertex.custom_job import chain

T4 = Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "SPOT", "us-central1")
L4_FLEX = Shape("g2-standard-8", "NVIDIA_L4", 1, "FLEX_START", "us-central1")
NAME = "projects/p/zones/us-central1-a/reservations/t4"
SPECIFIC = Reservation("SPECIFIC_RESERVATION", NAME)


def reasons(failures: list[tuple[str, str]]) -> str:
    return " | ".join(reason for _prop, reason in failures)


@pytest.mark.parametrize(
    ("shape", "prop", "words"),
    [
        (Shape("g2-standard-8", "NVIDIA_TESLA_T4", 1, "SPOT"), "fallbacks[0].machine_type", "cannot take"),
        (Shape("g2-standard-8", None, 0, "SPOT"), "fallbacks[0].accelerator_type", "comes with GPUs"),
        (Shape("n1-standard-8", "NVIDIA_TESLA_T4", 8, "SPOT"), "fallbacks[0].accelerator_count", "1, 2 or 4"),
        (Shape("n1-standard-8", "NVIDIA_T4", 1, "SPOT"), "fallbacks[0].accelerator_type", "unknown"),
        (Shape("n1-standard-8", None, 2, "SPOT"), "fallbacks[0].accelerator_type", "is not set"),
    ],
)
def test_a_machine_that_does_not_fit_its_gpu_is_named_at_its_place(
    shape: Shape, prop: str, words: str
) -> None:
    ((where, reason),) = machine_failures("fallbacks[0]", shape)
    assert where == prop and words in reason


def test_fitting_machines_pass() -> None:
    assert machine_failures("", T4) == machine_failures("", L4_FLEX) == []
    assert machine_failures("", Shape("e2-standard-4", None, 0, "STANDARD")) == []


def test_a_count_and_a_fallback_entry_are_checked_before_they_make_a_shape() -> None:
    assert count_failures("", 1) == []
    assert "non-negative integer" in reasons(count_failures("", "two"))
    assert "non-negative integer" in reasons(count_failures("", True))
    assert entry_failures("fallbacks[1]", {"machine_type": "g2-standard-4", "region": "us-east4"}) == []
    bad = entry_failures(
        "fallbacks[1]", {"accelerator_count": -1, "region": "us-east4-a", "machine_type": ""}
    )
    assert {prop for prop, _ in bad} == {"fallbacks[1]", "fallbacks[1].region"}
    assert "machine_type must be a non-empty string" in reasons(bad)
    assert "must be a region id" in reasons(bad) and "whole number >= 0" in reasons(bad)
    assert "must be one of" in reasons(entry_failures("fallbacks[0]", {"scheduling_strategy": "CHEAP"}))


@pytest.mark.parametrize(
    ("reservation", "region", "strategy", "words"),
    [
        (Reservation("SPECIFIC_RESERVATION", "t4"), "us-central1", "STANDARD", "full name"),
        (Reservation("SPECIFIC_RESERVATION"), "us-central1", "STANDARD", "not None"),
        (SPECIFIC, "us-east4", "STANDARD", "zone us-central1-a, not in the shape's region us-east4"),
        (Reservation("ANY_RESERVATION", NAME), "us-central1", "STANDARD", "only for SPECIFIC_RESERVATION"),
        (Reservation("ANY_RESERVATION"), "us-central1", "FLEX_START", "cannot go with scheduling_strategy"),
        (Reservation("ANY_RESERVATION"), "us-central1", "SPOT", "cannot go with Spot VMs"),
        (Reservation("SOMETIMES"), "us-central1", "STANDARD", "type must be one of"),
    ],
)
def test_a_reservation_vertex_refuses(
    reservation: Reservation, region: str, strategy: str, words: str
) -> None:
    ((prop, reason),) = reservation_failures("fallbacks[2]", reservation, region, strategy)
    assert prop == "fallbacks[2].reservation_affinity" and words in reason


def test_a_reservation_vertex_takes_and_one_without_a_region() -> None:
    assert reservation_failures("reservation_affinity", SPECIFIC, "us-central1", "STANDARD") == []
    assert reservation_failures("reservation_affinity", None, "us-central1", "SPOT") == []
    assert reservation_failures("reservation_affinity", SPECIFIC, None, "STANDARD") == []  # no verdict
    assert reservation_failures("reservation_affinity", Reservation("NO_RESERVATION"), None, "SPOT") == []


def test_the_form_of_a_reservation_map_is_read_once() -> None:
    assert parse_affinity("reservation_affinity", {"type": "SPECIFIC_RESERVATION", "reservation": NAME}) == (
        SPECIFIC,
        [],
    )
    assert parse_affinity("reservation_affinity", None) == (None, [])
    found, bad = parse_affinity("fallbacks[0]", {"kind": "ANY_RESERVATION"})
    assert found is None and "unknown keys ['kind']" in reasons(bad)
    assert "must be a map" in reasons(parse_affinity("reservation_affinity", "ANY")[1])


def test_flex_start_on_a_shape_needs_a_dws_gpu_one_machine_and_a_week_at_most() -> None:
    job = chain.Chain(primary=L4_FLEX, timeout_seconds=3600)
    assert chain.primary_failures(job) == []
    t4 = Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "FLEX_START", "us-central1")
    assert "not NVIDIA_TESLA_T4" in reasons(chain.flex_start_failures("fallbacks[0]", t4, job))
    cpu = Shape("n1-standard-8", None, 0, "FLEX_START")
    assert "not a CPU-only job" in reasons(chain.flex_start_failures("x", cpu, job))
    with_cpu_pool = chain.Chain(primary=L4_FLEX, kept_pools=("e2-standard-4",))
    assert "same machine configuration" in reasons(chain.primary_failures(with_cpu_pool))
    long = chain.Chain(primary=L4_FLEX, timeout_seconds=chain.FLEX_START_MAX_TIMEOUT_SECONDS + 1)
    ((prop, reason),) = chain.primary_failures(long)
    assert prop == "scheduling_strategy" and "at most 7 days" in reason


def test_each_fallback_is_named_by_its_place_and_a_bad_reservation_hides_its_other_problems() -> None:
    bad_gpu = Shape("g2-standard-4", "NVIDIA_TESLA_T4", 1, "SPOT", "us-central1")
    reserved_spot = Shape("g2-standard-4", "NVIDIA_TESLA_T4", 1, "SPOT", "us-central1", SPECIFIC)
    job = chain.Chain(primary=T4, fallbacks=(None, bad_gpu, reserved_spot))
    found = chain.chain_failures(job)
    assert [prop for prop, _ in found] == ["fallbacks[1].machine_type", "fallbacks[2].reservation_affinity"]
    assert "cannot go with Spot VMs" in found[1][1]


def test_max_wait_needs_a_flex_start_shape_somewhere_in_the_chain() -> None:
    assert chain.wait_failures(chain.Chain(primary=T4, max_wait_seconds=600)) == [
        (
            "max_wait_seconds",
            "max_wait_seconds applies only to scheduling_strategy FLEX_START, which no shape uses",
        )
    ]
    assert chain.wait_failures(chain.Chain(primary=T4, fallbacks=(L4_FLEX,), max_wait_seconds=600)) == []
    assert chain.wait_failures(chain.Chain(primary=T4)) == []
    assert "whole number of seconds >= 0" in reasons(chain.max_wait_failures(-1))
    assert "one pass round the chain" in reasons(chain.deadline_failures(-5))
    assert chain.deadline_failures(0) == chain.max_wait_failures(0) == []


def test_fallback_regions_are_distinct_region_ids_other_than_home() -> None:
    assert chain.regions_failures("us-central1", ["us-east4", "europe-west4"]) == []
    assert [p for p, _ in chain.regions_failures("us-central1", ["us-east4-a"])] == ["fallback_regions[0]"]
    assert "names a region twice" in reasons(chain.regions_failures("us-central1", ["us-east4", "us-east4"]))
    assert "own region us-central1" in reasons(chain.regions_failures("us-central1", ["us-central1"]))


def test_a_batch_predictions_shapes_stay_in_its_region_and_fit_their_gpus() -> None:
    primary = Shape("n1-standard-4", None, 0, "STANDARD", "us-central1")
    assert batch.primary_failures(primary) == []
    elsewhere = Shape("n1-highmem-8", None, 0, "STANDARD", "europe-west4")
    ((prop, reason),) = batch.fallback_failures("fallbacks[0]", elsewhere, "us-central1", False)
    assert prop == "fallbacks[0].region" and batch.SAME_REGION_DOC in reason
    bad_gpu = Shape("g2-standard-4", "NVIDIA_TESLA_T4", 1, "STANDARD", "us-central1")
    ((prop, reason),) = batch.fallback_failures("fallbacks[1]", bad_gpu, "us-central1", False)
    assert prop == "fallbacks[1]" and "cannot take NVIDIA_TESLA_T4" in reason
    reserved = Shape("n1-standard-4", None, 0, "STANDARD", "us-central1", Reservation("ANY_RESERVATION", "x"))
    assert batch.fallback_failures("fallbacks[2]", reserved, "us-central1", False) == []  # the job's, checked
    assert "only for SPECIFIC" in reasons(
        batch.fallback_failures("fallbacks[2]", reserved, "us-central1", True)
    )


def test_a_batch_predictions_replicas_machine_and_images() -> None:
    assert batch.replica_failures(1, 2) == []
    assert [p for p, _ in batch.replica_failures(0, "x")] == ["starting_replica_count", "max_replica_count"]
    assert "below starting_replica_count" in reasons(batch.replica_failures(3, 2))
    assert batch.machine_type_failures("n1-standard-4") == []
    assert batch.machine_type_failures("") == batch.machine_type_failures(None) != []
    assert batch.images_failures("gs://b/i/", "vertex") == batch.images_failures("/data", "local") == []
    assert "gs:// prefix" in reasons(batch.images_failures("/data", "vertex"))
    assert "is required" in reasons(batch.images_failures("", "local"))


def test_a_fallback_entry_makes_its_shape_from_the_primary_or_says_what_is_wrong() -> None:
    reserved = Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "STANDARD", "us-central1", SPECIFIC)
    assert fallback_shape("fallbacks[0]", {"region": "us-east4"}, reserved) == (
        [],
        Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "STANDARD", "us-east4", SPECIFIC),  # inherited
    )
    bad, shape = fallback_shape(
        "fallbacks[1]", {"accelerator_count": "two", "reservation_affinity": "ANY"}, T4
    )
    assert shape is None and [prop for prop, _ in bad] == [
        "fallbacks[1]",
        "fallbacks[1].reservation_affinity",
    ]
