"""Shapes and strategies, pure: applying a shape to pools, check's rules for them, the spec they build, and
what a run on several shapes costs."""

import pytest
from google.cloud import aiplatform_v1
from pulumi.output import Unknown

from infra.vertex.capacity import placement, quotas
from infra.vertex.capacity.machines import FAMILY_ACCELERATORS
from infra.vertex.capacity.placement import Shape
from infra.vertex.custom_job import spec
from infra.vertex.lifecycle import restarts, spend, waiting
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.status import JobStatus
from tests.vertex.props import custom_job_request, job_props, placed, pool

Strategy = aiplatform_v1.Scheduling.Strategy
A100 = {"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100"}


def failures(**overrides):
    return spec.validate(spec.with_defaults(job_props(**overrides)))


def test_a_shape_applies_to_the_chief_and_the_accelerator_pools_only():
    props = spec.with_defaults(
        job_props(
            worker_pools=[
                pool(),
                pool(replica_count=3),
                pool(machine_type="e2-standard-4", accelerator_type=None, accelerator_count=0),
            ]
        )
    )
    l4 = placement.resolve(
        {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"},
        Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "SPOT"),
    )
    assert l4 == Shape("g2-standard-8", "NVIDIA_L4", 1, "SPOT")  # count and strategy from the primary
    chief, workers, cpu = spec.body(props).on(l4).pools
    assert (chief.machine_type, workers.machine_type, cpu.machine_type) == (
        "g2-standard-8",
        "g2-standard-8",
        "e2-standard-4",
    )
    assert workers.replica_count == 3 and cpu.accelerator_type is None


@pytest.mark.parametrize(
    ("overrides", "strategy", "spot"),
    [
        ({}, "STANDARD", False),
        ({"spot": True}, "SPOT", True),
        ({"scheduling_strategy": "SPOT", "spot": None}, "SPOT", True),
        ({"scheduling_strategy": "FLEX_START", "spot": None}, "FLEX_START", False),
    ],
)
def test_strategy_defaults_from_spot_and_spot_from_strategy(overrides, strategy, spot):
    props = spec.with_defaults(job_props(**overrides))
    assert (props["scheduling_strategy"], props["spot"]) == (strategy, spot)


def test_flex_start_spec_carries_strategy_and_max_wait():
    props = spec.with_defaults(
        job_props(
            spot=None, scheduling_strategy="FLEX_START", max_wait_seconds=7200, worker_pools=[pool(**A100)]
        )
    )
    assert spec.validate(props) == []
    scheduling = custom_job_request(props).job_spec.scheduling
    assert scheduling.strategy == Strategy.FLEX_START and scheduling.max_wait_duration.total_seconds() == 7200
    assert waiting.queue_limit_seconds(placed(props)) == 7200
    no_wait = spec.with_defaults({**props, "max_wait_seconds": None})
    assert waiting.queue_limit_seconds(placed(no_wait)) == 24 * 3600  # Vertex's default maxWaitDuration


def test_a_fallback_builds_its_own_shape_under_the_primary_key():
    props = spec.with_defaults(job_props(spot=True, fallbacks=[{"scheduling_strategy": "STANDARD"}]))
    primary, fallback = custom_job_request(props, 0), custom_job_request(props, 1)
    assert primary.job_spec.scheduling.strategy == Strategy.SPOT
    assert fallback.job_spec.scheduling.strategy == Strategy.STANDARD
    assert primary.labels[KEY_LABEL] == fallback.labels[KEY_LABEL] == spec.job_key(props)


@pytest.mark.parametrize(
    ("overrides", "prop", "needle"),
    [
        (
            {"scheduling_strategy": "CHEAP"},
            "scheduling_strategy",
            "must be one of STANDARD, SPOT, FLEX_START",
        ),
        ({"spot": True, "scheduling_strategy": "STANDARD"}, "scheduling_strategy", "spot is true but"),
        ({"spot": None, "scheduling_strategy": "FLEX_START"}, "scheduling_strategy", "not NVIDIA_TESLA_T4"),
        (
            {
                "spot": None,
                "scheduling_strategy": "FLEX_START",
                "worker_pools": [pool(**A100)],
                "timeout_seconds": 8 * 24 * 3600,
            },
            "scheduling_strategy",
            "at most 7 days",
        ),
        (
            {
                "spot": None,
                "scheduling_strategy": "FLEX_START",
                "worker_pools": [
                    pool(**A100),
                    pool(machine_type="e2-standard-4", accelerator_type=None, accelerator_count=0),
                ],
            },
            "scheduling_strategy",
            "same machine configuration",
        ),
        ({"max_wait_seconds": 60}, "max_wait_seconds", "no shape uses"),
        (
            {
                "max_wait_seconds": -1,
                "scheduling_strategy": "FLEX_START",
                "spot": None,
                "worker_pools": [pool(**A100)],
            },
            "max_wait_seconds",
            ">= 0",
        ),
        ({"fallbacks": [{"accelerator_count": "two"}]}, "fallbacks[0]", "accelerator_count must be a whole"),
        ({"fallbacks": [{"machine_type": 8}]}, "fallbacks[0]", "machine_type must be a non-empty string"),
        ({"fallbacks": {"machine_type": "g2-standard-8"}}, "fallbacks", "must be a list"),
        ({"fallbacks": [{"machine": "g2-standard-8"}]}, "fallbacks[0]", "unknown keys ['machine']"),
        ({"fallbacks": [{}, {"scheduling_strategy": "LOW"}]}, "fallbacks[1]", "scheduling_strategy must be"),
        (
            {"fallbacks": [{"machine_type": "g2-standard-8"}]},
            "fallbacks[0].machine_type",
            "cannot take NVIDIA_TESLA_T4",
        ),
        ({"fallbacks": [{"scheduling_strategy": "FLEX_START"}]}, "fallbacks[0]", "not NVIDIA_TESLA_T4"),
    ],
)
def test_check_rejects_bad_strategies_and_fallbacks(overrides, prop, needle):
    found = failures(**overrides)
    assert [p for p, _ in found] == [prop], found
    assert needle in found[0][1]


def test_max_wait_zero_waits_indefinitely_and_the_provider_allows_grace():
    flex = {"spot": None, "scheduling_strategy": "FLEX_START", "worker_pools": [pool(**A100)]}
    assert failures(**flex, max_wait_seconds=0) == []
    zero = spec.with_defaults(job_props(**flex, max_wait_seconds=0))
    # 0 is sent (Vertex: "If set to 0, the job will wait indefinitely"), not left out (its default: 1 day).
    assert "max_wait_duration" in custom_job_request(zero).job_spec.scheduling
    assert waiting.queue_deadline_seconds(placed(zero)) == float("inf")
    hour = spec.with_defaults(job_props(**flex, max_wait_seconds=3600))
    assert waiting.queue_deadline_seconds(placed(hour)) == 3600 + waiting.FLEX_START_WAIT_GRACE_SECONDS
    assert waiting.queue_deadline_seconds(placed(job_props(queue_timeout_seconds=60))) == 60


def test_a_gpu_job_falls_back_to_an_explicit_cpu_shape():
    gpu = Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "SPOT")
    cpu = placement.resolve({"machine_type": "n1-highcpu-16", "accelerator_count": 0}, gpu)
    assert cpu == Shape("n1-highcpu-16", None, 0, "SPOT")
    assert failures(spot=True, fallbacks=[{"machine_type": "n1-highcpu-16", "accelerator_count": 0}]) == []
    props = spec.with_defaults(job_props(spot=True))
    assert spec.body(props).on(cpu).pools[0].accelerator_type is None
    # The other way round, a GPU count with no type to take from a CPU primary, is reported, not a KeyError.
    cpu_pool = pool(machine_type="n1-standard-8", accelerator_type=None, accelerator_count=0)
    found = failures(
        worker_pools=[cpu_pool], fallbacks=[{"accelerator_count": 1, "scheduling_strategy": "FLEX_START"}]
    )
    assert found[0] == (
        "fallbacks[0].accelerator_type",
        "accelerator_count is 1 but accelerator_type is not set",
    )


def test_a_flex_start_fallback_allows_max_wait_and_unknown_fallbacks_pass():
    flex = {**A100, "scheduling_strategy": "FLEX_START"}
    assert failures(fallbacks=[flex], max_wait_seconds=600) == []
    assert failures(fallbacks=Unknown()) == []
    assert failures(fallbacks=[{"machine_type": Unknown()}]) == []
    assert failures(scheduling_strategy=Unknown(), fallbacks=[flex]) == []
    assert failures(spot=Unknown(), fallbacks=[flex], max_wait_seconds=60) == []


def test_every_accelerator_check_accepts_has_a_quota_id_or_is_named_unchecked():
    for family, kinds in FAMILY_ACCELERATORS.items():
        for kind in kinds:
            props = job_props(worker_pools=[pool(machine_type=f"{family}-standard-8", accelerator_type=kind)])
            pools = placement.pools(props)
            counted = {need.quota_id for need in quotas.quota_needs(pools, "STANDARD")}
            assert kind in quotas.QUOTA_GPU_NAMES or kind in quotas.unchecked(pools), kind
            assert any("GPUs" in q for q in counted) == (kind in quotas.QUOTA_GPU_NAMES)


@pytest.mark.parametrize(
    ("strategy", "machine", "expected"),
    [
        (
            "STANDARD",
            "n1-standard-8",
            {"CustomModelTrainingT4GPUsPerProjectPerRegion", "CustomModelTrainingCPUsPerProjectPerRegion"},
        ),
        (
            "SPOT",
            "n1-standard-8",
            {
                "CustomModelTrainingPreemptibleT4GPUsPerProjectPerRegion",
                "CustomModelTrainingPreemptibleCPUsPerProjectPerRegion",
            },
        ),
        ("FLEX_START", "g2-standard-8", {"CustomModelTrainingPreemptibleL4GPUsPerProjectPerRegion"}),
        ("STANDARD", "e2-standard-4", {"CustomModelTrainingCPUsPerProjectPerRegion"}),
    ],
)
def test_quota_ids_per_strategy_and_family(strategy, machine, expected):
    kind = {"n1": "NVIDIA_TESLA_T4", "g2": "NVIDIA_L4", "e2": None}[machine[:2]]
    chief = pool(machine_type=machine, accelerator_type=kind, accelerator_count=int(bool(kind)))
    props = job_props(spot=None, scheduling_strategy=strategy, worker_pools=[chief])
    shaped = placed(props)
    assert {need.quota_id for need in quotas.quota_needs(shaped.pools, shaped.strategy)} == expected


def test_cost_covers_each_attempt_at_its_own_shape(monkeypatch):
    monkeypatch.setattr(restarts, "running_seconds", lambda status: 3600.0 if status.name == "j1" else 1800.0)
    props = spec.with_defaults(job_props(spot=False, fallbacks=[{"machine_type": "n1-standard-16"}]))
    primary, larger = placement.shapes(props)
    first = JobStatus("j1", "JOB_STATE_FAILED", "url")
    carried = spend.after(placed(props, shape=primary).rate, first)
    second = JobStatus("j2", "JOB_STATE_SUCCEEDED", "url", labels={spend.SPENT_LABEL: carried.label})
    # On-demand list prices (pricing.py's cited table): n1-standard-8 + T4 for an hour, then
    # n1-standard-16 + T4 for half an hour.
    expected = round((0.436998 + 0.4025) * 100) / 100 + (0.873996 + 0.4025) / 2
    total = spend.spent(placed(props, shape=larger).rate, second)
    assert total.known_usd == pytest.approx(expected, abs=1e-4) and total.attempts == 2
    # A Spot attempt has no sourced price: it counts at its on-demand price, marked as an upper bound.
    spot = spend.spent(placed(job_props(spot=True)).rate, first)
    assert spot.bound and spot.known_usd == pytest.approx(0.436998 + 0.4025, abs=1e-4)
    assert spend.Carried.of(JobStatus("j", "s", "u", labels={spend.SPENT_LABEL: "84-1-bound"})).bound
