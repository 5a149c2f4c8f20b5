"""Reservations: the prop reaches MachineSpec.reservation_affinity of every pool with the shape's machines,
and check refuses what Vertex refuses (no full name, a zone of another region, FLEX_START)."""

import pytest
from google.cloud import aiplatform_v1

from infra.vertex.custom_job import spec
from tests.vertex.props import custom_job_request, job_props, pool, tuning_job_request

Type = aiplatform_v1.ReservationAffinity.Type
NAME = "projects/demo-project/zones/us-central1-b/reservations/t4-pool"
SPECIFIC = {"type": "SPECIFIC_RESERVATION", "reservation": NAME}


def failures(**overrides):
    return spec.validate(spec.with_defaults(job_props(**overrides)))


def test_a_specific_reservation_reaches_every_pool_with_the_shapes_machines():
    props = spec.with_defaults(
        job_props(
            reservation_affinity=SPECIFIC,
            worker_pools=[
                pool(),
                pool(replica_count=2),
                pool(machine_type="e2-standard-4", accelerator_type=None, accelerator_count=0),
            ],
        )
    )
    assert failures(**{k: props[k] for k in ("reservation_affinity", "worker_pools")}) == []
    chief, workers, cpu = custom_job_request(props).job_spec.worker_pool_specs
    for machine in (chief.machine_spec, workers.machine_spec):
        affinity = machine.reservation_affinity
        assert affinity.reservation_affinity_type == Type.SPECIFIC_RESERVATION
        assert (affinity.key, list(affinity.values)) == ("compute.googleapis.com/reservation-name", [NAME])
    assert cpu.machine_spec.reservation_affinity.reservation_affinity_type == Type.TYPE_UNSPECIFIED


def test_a_fallback_may_drop_the_jobs_reservation():
    props = spec.with_defaults(
        job_props(
            reservation_affinity=SPECIFIC, fallbacks=[{"reservation_affinity": {"type": "NO_RESERVATION"}}]
        )
    )
    assert spec.validate(props) == []
    fallback = custom_job_request(props, 1).job_spec.worker_pool_specs[0].machine_spec
    assert fallback.reservation_affinity.reservation_affinity_type == Type.NO_RESERVATION


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"reservation_affinity": {"type": "SPECIFIC_RESERVATION", "reservation": "t4-pool"}}, "full name"),
        ({"reservation_affinity": {"type": "SPECIFIC_RESERVATION"}}, "full name"),
        (
            {"reservation_affinity": {"type": "SPECIFIC_RESERVATION",
                                      "reservation": "projects/p/zones/us-east4-a/reservations/r"}},
            "zone us-east4-a, not in the shape's region us-central1",
        ),
        ({"reservation_affinity": {"type": "ANY"}}, "type must be one of"),
        ({"reservation_affinity": {"type": "ANY_RESERVATION", "reservation": NAME}}, "only for SPECIFIC"),
        ({"reservation_affinity": {"type": "ANY_RESERVATION", "zone": "x"}}, "unknown keys ['zone']"),
        (
            {"reservation_affinity": {"type": "ANY_RESERVATION"}, "scheduling_strategy": "FLEX_START",
             "spot": None, "worker_pools": [pool(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4")],
            },
            "cannot go with scheduling_strategy FLEX_START",
        ),
        (
            {"fallbacks": [{"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4",
                            "scheduling_strategy": "FLEX_START", "reservation_affinity": SPECIFIC}]},
            "fallbacks[0].reservation_affinity SPECIFIC_RESERVATION cannot go with scheduling_strategy",
        ),
        ({"reservation_affinity": SPECIFIC, "fallbacks": [{"region": "us-east4"}]},
         "not in the shape's region us-east4"),
        ({"reservation_affinity": SPECIFIC, "spot": True},
         "reservation_affinity SPECIFIC_RESERVATION cannot go with Spot VMs"),
        ({"reservation_affinity": {"type": "ANY_RESERVATION"}, "scheduling_strategy": "SPOT", "spot": None},
         "reservation_affinity ANY_RESERVATION cannot go with Spot VMs"),
        ({"fallbacks": [{"scheduling_strategy": "SPOT",
                         "reservation_affinity": {"type": "ANY_RESERVATION"}}]},
         "fallbacks[0].reservation_affinity ANY_RESERVATION cannot go with Spot VMs"),
        ({"fallbacks": [{"region": "us-central"}]}, "fallbacks[0].region must be a region id"),
        ({"fallback_regions": ["us-east4", "us-east4"]}, "names a region twice"),
        ({"fallback_regions": ["us-central1"]}, "the job's own region"),
        ({"fallback_regions": ["us-east4-a"]}, "fallback_regions[0] must be a region id"),
        ({"fallback_regions": "us-east4"}, "must be a list"),
        ({"capacity_deadline_seconds": -1}, "capacity_deadline_seconds must be a whole number"),
        ({"region": "US-CENTRAL1"}, "region must be a region id"),
    ],
)  # fmt: skip
def test_check_refuses_what_vertex_refuses(overrides, words):
    found = failures(**overrides)
    assert any(words in reason for _, reason in found), found


def test_fallback_regions_and_the_deadline_pass_check():
    assert failures(fallback_regions=["us-east4", "europe-west4"], capacity_deadline_seconds=7200) == []


def test_a_study_takes_the_same_regions_reservations_and_deadline():
    from infra.vertex.capacity import placement
    from infra.vertex.tuning import spec as tuning_spec
    from tests.vertex.tuning_props import tuning_props

    props = tuning_spec.with_defaults(
        tuning_props(
            reservation_affinity=SPECIFIC, fallback_regions=["us-east4"], capacity_deadline_seconds=600
        )
    )
    assert tuning_spec.validate(props) == []
    chain = placement.shapes(props)
    # The specific reservation lives in us-central1-b: its shape is not moved to us-east4.
    assert [s.region for s in chain] == ["us-central1"]
    trial = tuning_job_request(props, 0).trial_job_spec.worker_pool_specs[0].machine_spec
    assert list(trial.reservation_affinity.values) == [NAME]
    assert tuning_spec.job_key(props) == tuning_spec.job_key({**props, "capacity_deadline_seconds": 0})
    bad = tuning_spec.validate(
        tuning_spec.with_defaults(tuning_props(reservation_affinity={"type": "SPECIFIC_RESERVATION"}))
    )
    assert any("full name" in reason for _, reason in bad)


def test_spot_with_a_reservation_cites_the_compute_engine_limitation():
    ((key, reason),) = failures(reservation_affinity=SPECIFIC, spot=True)
    assert key == "reservation_affinity"
    assert "Spot VMs and preemptible instances cannot consume reservations" in reason
    assert "https://cloud.google.com/compute/docs/instances/reservations-consume" in reason


@pytest.mark.parametrize(
    "fallback",
    [
        {"scheduling_strategy": "SPOT"},  # Spot cannot consume one
        {"machine_type": "n1-standard-16"},  # another machine: the reservation does not match it
        {"accelerator_count": 2},
        {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"},
    ],
)
def test_a_fallback_that_changes_the_machines_or_goes_spot_carries_no_inherited_reservation(fallback):
    props = spec.with_defaults(job_props(reservation_affinity=SPECIFIC, fallbacks=[fallback]))
    assert spec.validate(props) == []
    request = custom_job_request(props, 1).job_spec.worker_pool_specs[0].machine_spec
    assert request.reservation_affinity.reservation_affinity_type == Type.TYPE_UNSPECIFIED


def test_a_fallback_that_keeps_the_machines_on_demand_inherits_the_reservation():
    props = spec.with_defaults(
        job_props(reservation_affinity=SPECIFIC, fallbacks=[{"region": "us-central1"}])
    )
    assert spec.validate(props) == []
    request = custom_job_request(props, 1).job_spec.worker_pool_specs[0].machine_spec
    assert request.reservation_affinity.reservation_affinity_type == Type.SPECIFIC_RESERVATION
    assert list(request.reservation_affinity.values) == [NAME]


def test_a_fallback_on_other_machines_may_name_its_own_reservation():
    own = {"type": "ANY_RESERVATION"}
    props = spec.with_defaults(
        job_props(
            reservation_affinity=SPECIFIC,
            fallbacks=[{"machine_type": "n1-standard-16", "reservation_affinity": own}],
        )
    )
    assert spec.validate(props) == []
    request = custom_job_request(props, 1).job_spec.worker_pool_specs[0].machine_spec
    assert request.reservation_affinity.reservation_affinity_type == Type.ANY_RESERVATION
