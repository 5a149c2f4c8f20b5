"""vertex-training:endpoint: the stack's endpoint (native AiEndpoint, labels, region) and the newest model
version deployed to it (the Deployment dynamic resource, depending on the endpoint and the version); a stack
without the key declares nothing new. The native endpoint needs the Pulumi CLI and gcp plugin to run: this is
the mocked program."""

from __future__ import annotations

import pytest

from infra.config import ConfigError, ConfigErrors
from infra.config.reader import problems
from infra.vertex.deployment.resource import RESOURCE_TYPE as DEPLOYMENT
from infra.vertex.model.resource import RESOURCE_TYPE as MODEL_VERSION
from infra.workloads.serving import endpoint_id
from tests.stack.conftest import STACKS, cached_run, run_stack, stack_config

ENDPOINT = "gcp:vertex/aiEndpoint:AiEndpoint"
SERVING = {"machineType": "n1-standard-4", "minReplicas": 1, "maxReplicas": 3, "maxHourlyUsd": 2}


def test_the_deployment_depends_on_the_endpoint_and_the_model_version() -> None:
    run = run_stack("prod", endpoint=SERVING, allowUnpricedShapes=True)
    endpoint, deployment, version = run.one(ENDPOINT), run.one(DEPLOYMENT), run.one(MODEL_VERSION)
    assert {endpoint.urn, version.urn} <= set(deployment.dependencies)
    assert endpoint.inputs["labels"]["pulumi_stack"] == "prod"
    assert endpoint.inputs["labels"]["pulumi_project"] == "vertex-training"
    assert endpoint.inputs["location"] == endpoint.inputs["region"] == stack_config("prod").region
    assert endpoint.inputs["name"] == endpoint_id("vertex-training", "prod", endpoint.inputs["region"])
    assert "trafficSplit" not in endpoint.inputs  # left to the deployment
    inputs = deployment.inputs
    assert (inputs["machine_type"], inputs["min_replica_count"], inputs["max_replica_count"]) == (
        "n1-standard-4",
        1,
        3,
    )
    assert inputs["endpoint"].endswith(f"/endpoints/{endpoint.inputs['name']}")
    assert (inputs["max_hourly_usd"], inputs["allow_unpriced_shapes"]) == (2, True)
    assert set(run.outputs) >= {"endpoint_name", "deployed_model_id"}


@pytest.mark.parametrize("stack", STACKS)
def test_a_stack_without_the_key_declares_nothing_new(stack: str) -> None:
    run = cached_run(stack)
    assert run.by_type(ENDPOINT) == [] and run.by_type(DEPLOYMENT) == []
    assert "endpoint_name" not in run.outputs and "deployed_model_id" not in run.outputs


def test_every_mistake_in_the_key_is_named_at_once() -> None:
    with pytest.raises(ConfigErrors) as raised:
        stack_config(
            "dev",
            registerModel=False,
            endpoint={"minReplicas": 0, "spot": "yes", "maxHourlyUsd": -1, "replicas": 2},
        )
    found = {(p.key, p.problem.split(",")[0]) for p in problems(raised.value)}
    keys = {key for key, _ in found}
    assert {"endpoint", "endpoint.minReplicas", "endpoint.spot", "endpoint.maxHourlyUsd"} <= keys, found
    texts = " ".join(str(p) for p in problems(raised.value))
    assert "registerModel true" in texts and "unknown keys ['replicas']" in texts


def test_max_hourly_usd_without_a_sourced_price_follows_the_unpriced_shapes_rule() -> None:
    with pytest.raises(ConfigError) as raised:
        stack_config("prod", endpoint=SERVING)
    assert raised.value.key == "endpoint.maxHourlyUsd"
    assert "no row in Vertex AI prediction prices" in raised.value.problem
    assert "allowUnpricedShapes: true" in raised.value.problem
    assert stack_config("prod", endpoint=SERVING, allowUnpricedShapes=True).endpoint is not None


def test_max_hourly_usd_holds_the_price_at_max_replicas(monkeypatch: pytest.MonkeyPatch) -> None:
    from infra.vertex.cost import pricing

    # A row as one read from the price page would be (test data, shown to no one).
    monkeypatch.setitem(pricing.PREDICTION_TABLE, "us-central1", {"n1-standard-4": 0.75})
    with pytest.raises(ConfigError) as raised:
        stack_config("prod", endpoint=SERVING)  # 3 replicas: USD 2.25/h, above USD 2
    assert raised.value.key == "endpoint.maxHourlyUsd" and "USD 2.25/h at 3 replicas" in raised.value.problem
    assert stack_config("prod", endpoint={**SERVING, "maxReplicas": 2}).endpoint is not None


@pytest.mark.parametrize(
    ("value", "key", "words"),
    [
        ("n1-standard-2", "endpoint", "must be a map"),
        ({"minReplicas": 3, "maxReplicas": 2}, "endpoint.maxReplicas", "below min_replica_count"),
        ({"acceleratorCount": 1}, "endpoint.acceleratorType", "not set"),
        (
            {"machineType": "n1-standard-4", "acceleratorType": "NVIDIA_L4"},
            "endpoint.machineType",
            "cannot take",
        ),
        (
            {"spot": True, "reservationAffinity": {"type": "ANY_RESERVATION"}},
            "endpoint.reservationAffinity",
            "Spot",
        ),
    ],
)
def test_the_resources_rules_name_the_field(value: object, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as raised:
        stack_config("prod", endpoint=value)
    assert raised.value.key == key and words in raised.value.problem, str(raised.value)
