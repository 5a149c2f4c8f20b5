"""Preflight counts the quota of the jobs the stack really declares: its demand, computed from the stack's
configuration, matches the quota needs of the CustomJob and tuning-job inputs the mocked program registers."""

from __future__ import annotations

import pytest

from infra.preflight import demand
from infra.vertex.capacity import placement
from infra.vertex.capacity.quotas import quota_needs, trials_at_once
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB
from infra.vertex.tuning.resource import RESOURCE_TYPE as TUNING_JOB
from tests.stack.conftest import CLOUD_STACKS, cached_run, run_stack, stack_config
from tests.stack.test_tuning_stack import STUDY

NAMES = {"data-prep": "data-preparation job", "train": "training job"}


def _registered(run, parallel: int | None = None) -> dict[str, list[tuple]]:
    """Per job: each shape's quota needs, from the registered inputs, as the providers' pre-check counts."""
    found = {}
    for resource in [*run.by_type(CUSTOM_JOB), *run.by_type(TUNING_JOB)]:
        props = resource.inputs
        trials = int(props.get("parallel_trial_count", 1))
        needs = []
        for shape in placement.shapes(props):
            _region, pools = placement.on_shape(props, shape)
            held = trials_at_once(pools, trials) if trials > 1 else pools
            needs.append(tuple(quota_needs(held, shape.scheduling_strategy)))
        name = NAMES.get(resource.name) or f"tuning study ({trials} trials at once)"
        found[name] = needs
    return found


def _preflight(cfg) -> dict[str, list[tuple]]:
    return {job.name: [shape.needs for shape in job.shapes] for job in demand.jobs(cfg)}


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_the_committed_stacks(stack: str) -> None:
    assert _preflight(stack_config(stack)) == _registered(cached_run(stack))


def test_a_study_holds_its_parallel_trials() -> None:
    run = run_stack("dev", tuning=STUDY)
    registered = _registered(run)
    assert _preflight(stack_config("dev", tuning=STUDY)) == registered
    assert any(name.startswith("tuning study") for name in registered)


def test_a_fallback_in_another_region_is_counted_there() -> None:
    props = {
        "project": "p",
        "region": "us-central1",
        "scheduling_strategy": "STANDARD",
        "worker_pools": [
            {"machine_type": "g2-standard-4", "accelerator_type": "NVIDIA_L4", "accelerator_count": 1}
        ],
        "fallbacks": [{"region": "europe-west4"}],
    }
    shapes = demand.job_shapes(props)
    assert [(s.index, s.region) for s in shapes] == [(0, "us-central1"), (1, "europe-west4")]
    assert shapes[0].needs == shapes[1].needs


def test_a_gpu_deployment_holds_twice_its_max_replicas_gpus_in_the_serving_quota() -> None:
    """Quota is "max_replica_count * number of GPUs per replica" (machine_resources.proto), and a retraining
    holds the old and the new deployment at once."""
    endpoint = {"machineType": "n1-standard-4", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1}
    cfg = stack_config("prod", endpoint={**endpoint, "maxReplicas": 3})
    (serving,) = [job for job in demand.jobs(cfg) if job.name == "online deployment"]
    ((need,),) = [shape.needs for shape in serving.shapes]
    assert (need.quota_id, need.count) == ("CustomModelServingT4GPUsPerProjectPerRegion", 6)
    spot = stack_config("prod", endpoint={**endpoint, "spot": True})
    (serving,) = [job for job in demand.jobs(spot) if job.name == "online deployment"]
    assert serving.shapes[0].needs[0].quota_id == "CustomModelServingPreemptibleT4GPUsPerProjectPerRegion"
    # A CPU-only deployment: no documented serving vCPU quota id, so nothing is counted.
    cpu = stack_config("prod", endpoint={"machineType": "n1-standard-2"})
    assert [job.name for job in demand.jobs(cpu)] == [job.name for job in demand.jobs(stack_config("prod"))]


def test_a_stack_with_an_endpoint_needs_the_endpoint_permissions_and_others_do_not() -> None:
    from infra.preflight.run import project_needs

    served = project_needs(stack_config("prod", endpoint={"machineType": "n1-standard-2"}))
    plain = project_needs(stack_config("prod"))
    added = {p: r for p, r in served.items() if p not in plain}
    assert added == dict.fromkeys(
        [
            "aiplatform.endpoints.create",
            "aiplatform.endpoints.delete",
            "aiplatform.endpoints.deploy",
            "aiplatform.endpoints.get",
            "aiplatform.endpoints.undeploy",
        ],
        "roles/aiplatform.user",
    )
