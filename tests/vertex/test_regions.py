"""Regions in the chain, pure: the chain across fallback regions, a shape applied in another region, a job's
region read back from its resource name, outputs stored before regions existed, and the TensorBoard note."""

from google.cloud import aiplatform_v1

from infra.vertex.capacity import placement
from infra.vertex.capacity.placement import Shape
from infra.vertex.capacity.reservations import Reservation
from infra.vertex.custom_job import spec
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle import attempts
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.request import JobRequest
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners import submitted
from tests.vertex.props import custom_job_request, job_props

L4 = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"}


def props(**overrides):
    return spec.with_defaults(job_props(**{"spot": True, **overrides}))


def test_the_whole_chain_is_tried_again_in_each_fallback_region_in_order():
    chain = placement.shapes(props(fallbacks=[L4], fallback_regions=["us-east4", "europe-west4"]))
    assert [(s.machine_type, s.region) for s in chain] == [
        ("n1-standard-8", "us-central1"),
        ("g2-standard-8", "us-central1"),
        ("n1-standard-8", "us-east4"),
        ("g2-standard-8", "us-east4"),
        ("n1-standard-8", "europe-west4"),
        ("g2-standard-8", "europe-west4"),
    ]
    assert JobRequest.parse(CUSTOM_JOB, props(fallbacks=[L4], fallback_regions=["us-east4"])).regions() == [
        "us-central1",
        "us-east4",
    ]


def test_a_fallback_that_names_its_region_is_tried_once_and_a_specific_reservation_never_moves():
    reserved = {
        "type": "SPECIFIC_RESERVATION",
        "reservation": "projects/p/zones/us-central1-a/reservations/r",
    }
    chain = placement.shapes(
        props(
            fallbacks=[
                {**L4, "region": "us-west1"},
                {"scheduling_strategy": "STANDARD", "reservation_affinity": reserved, "spot": None},
            ],
            fallback_regions=["us-east4"],
        )
    )
    assert [(s.machine_type, s.scheduling_strategy, s.region) for s in chain] == [
        ("n1-standard-8", "SPOT", "us-central1"),
        ("g2-standard-8", "SPOT", "us-west1"),
        ("n1-standard-8", "STANDARD", "us-central1"),
        ("n1-standard-8", "SPOT", "us-east4"),
    ]
    assert chain[2].reservation == Reservation(**reserved)


def test_a_shape_in_another_region_moves_the_job_and_drops_the_tensorboard_link_with_one_line():
    job = props(tensorboard="projects/demo-project/locations/us-central1/tensorboards/7")
    moved = Shape("g2-standard-8", "NVIDIA_L4", 1, "SPOT", "us-east4")
    shaped = spec.body(job).on(moved)
    assert shaped.common.region == "us-east4" and shaped.common.tensorboard == ""
    assert shaped.common.output_dir == job["base_output_dir"]  # checkpoints resume across regions
    assert shaped.worker_pools[0].image_uri == job["worker_pools"][0]["image_uri"]
    request = JobRequest.parse(CUSTOM_JOB, job)
    note = placement.tensorboard_note(
        moved, request.region, request.common.tensorboard, request.common.output_dir
    )
    assert note is not None and "us-east4" in note and "gs://demo-bucket/runs/1/logs/" in note
    home = placement.shapes(job)[0]
    assert spec.body(job).on(home).common.tensorboard == job["tensorboard"]
    assert (
        placement.tensorboard_note(
            home, request.region, request.common.tensorboard, request.common.output_dir
        )
        is None
    )


def test_the_custom_job_of_a_moved_shape_keeps_the_key_so_adoption_finds_it_in_any_region():
    job = props(fallbacks=[L4], fallback_regions=["us-east4"])
    built = [custom_job_request(job, index) for index in range(4)]
    assert len({b.labels[KEY_LABEL] for b in built}) == 1
    assert spec.job_key(job) == spec.job_key({**job, "fallback_regions": ["europe-west4"]})
    assert spec.job_key(job) == spec.job_key({**job, "capacity_deadline_seconds": 600})
    assert spec.job_key(job) != spec.job_key({**job, "reservation_affinity": {"type": "ANY_RESERVATION"}})


def test_a_job_reads_its_region_from_its_resource_name():
    job = props(fallbacks=[L4], fallback_regions=["us-east4"])
    status = JobStatus(
        name="projects/demo-project/locations/us-east4/customJobs/12",
        state="JOB_STATE_RUNNING",
        console_url="",
        labels={"vertex_training_attempt": "1-3-0"},
        shape=Shape("g2-standard-8", "NVIDIA_L4", 1, "SPOT", region="us-east4"),
    )
    request = JobRequest.parse(CUSTOM_JOB, job)
    _index, shape = attempts.job_shape(status, request)
    assert shape.region == "us-east4"
    assert attempts.resume_index(status, request) == 3
    assert shape.as_dict()["region"] == "us-east4"


def test_a_placement_stored_without_region_ran_in_the_home_region():
    stored = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4", "accelerator_count": 1,
              "scheduling_strategy": "SPOT"}  # fmt: skip
    job = props()
    shape = placement.resolve(stored, placement.primary_shape(job))
    assert shape.region == "us-central1"
    assert spec.body(job).on(shape).common.region == "us-central1"


def test_spec_shape_reads_the_reservation_a_job_carries():
    job = props(reservation_affinity={"type": "ANY_RESERVATION"}, spot=False)
    built = custom_job_request(job, 0)
    assert submitted.custom_job_shape(built)["reservation_affinity"] == {"type": "ANY_RESERVATION"}
    assert "reservation_affinity" not in submitted.custom_job_shape(custom_job_request(props(), 0))
    assert built.job_spec.worker_pool_specs[
        0
    ].machine_spec.reservation_affinity.reservation_affinity_type == (
        aiplatform_v1.ReservationAffinity.Type.ANY_RESERVATION
    )


def test_a_move_across_regions_names_both_regions():
    left = Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "SPOT", "us-central1")
    line = attempts.move_line(
        left, "stockout", Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "SPOT", "us-east4")
    )
    assert line == (
        "leaving n1-standard-8 + 1 x NVIDIA_TESLA_T4 (SPOT) in us-central1: stockout; "
        "trying next: n1-standard-8 + 1 x NVIDIA_TESLA_T4 (SPOT) in us-east4"
    )


def test_calls_on_a_job_use_the_region_in_its_name():
    request = JobRequest.parse(CUSTOM_JOB, props())
    assert request.job_region("projects/demo-project/locations/us-east4/customJobs/7") == "us-east4"
    assert request.region == "us-central1"
    assert request.job_region("local/abc") == "us-central1"
    assert request.job_region("") == "us-central1"
