"""The real dynamic-provider host runs the Deployment provider against the fake EndpointService and Model
Registry (the real EndpointServiceClient), on inputs the Python SDK serialized: preview, up, refresh, a
retraining (a replacement: the new version takes all traffic, then the old one is undeployed), a replica
change (scaled in place), destroy, and adoption after an interrupted up."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pulumi_gcp as gcp
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.rpc import UNKNOWN

from infra.vertex.deployment import spec as deployment_spec
from infra.vertex.deployment.resource import RESOURCE_TYPE, Deployment, DeploymentArgs
from tests.engine.host import plain
from tests.fakes.billing import FakeCloudCatalog
from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.model_service import FakeModelService
from tests.fakes.prediction_skus import N1_CORE, N1_RAM, add_prediction_skus
from tests.fakes.pulumi_mocks import run_program

PROJECT, REGION = "demo-project", "us-central1"
LOCATION = f"projects/{PROJECT}/locations/{REGION}"
ENDPOINT = f"{LOCATION}/endpoints/1234"
MODEL = f"{LOCATION}/models/vertex-training-dev"


def recorded(version: str, *, preview: bool = False, **extra: Any) -> struct_pb2.Struct:
    def program() -> object:
        # Upstream outputs, unknown in a preview as the model version and the endpoint are on a first up.
        account = gcp.serviceaccount.Account("server", account_id="server", project=PROJECT)
        deployment = Deployment(
            "deployment",
            DeploymentArgs(
                project=PROJECT,
                region=REGION,
                endpoint=account.email.apply(lambda _: ENDPOINT),
                model=account.email.apply(lambda _: f"{MODEL}@{version}"),
                machine_type="n1-standard-2",
                min_replica_count=extra.pop("min_replica_count", 1),
                max_replica_count=extra.pop("max_replica_count", 2),
                display_name="vertex-training-dev",
                poll_interval_seconds=0.05,
                **extra,
            ),
        )
        return deployment.deployed_model_id

    return run_program(program, stack="dev", preview=preview).one(RESOURCE_TYPE).struct


@pytest.fixture
def fake() -> Iterator[FakeEndpointService]:
    models = FakeModelService()
    for _ in range(2):  # two trained versions: 1, then a retraining's 2
        models.add_version(LOCATION, "vertex-training-dev")
    endpoints = FakeEndpointService(models)
    endpoints.add_endpoint(ENDPOINT, {"pulumi_stack": "dev"})
    yield endpoints
    endpoints.stop()


def test_up_refresh_retrain_and_destroy(start_host, fake: FakeEndpointService) -> None:
    host = start_host(VERTEX_AI_EMULATOR_HOST=fake.start())
    preview = recorded("1", preview=True)
    assert plain(preview)["model"] == UNKNOWN
    assert list(host.check(preview).failures) == []

    first_inputs = host.check(recorded("1")).inputs
    # What check says of the price (no Billing Catalog here: no sourced price) and of maxCostUsd, on stderr.
    assert "costs no sourced price (n1-standard-2 in us-central1: no row in Vertex AI prediction prices" in (
        host.stderr()
    )
    assert "maxCostUsd does not apply (a deployment has no end)" in host.stderr()
    first = host.create(first_inputs)
    first_id = plain(first.properties)["deployed_model_id"]
    assert first.id == f"{ENDPOINT}/deployedModels/{first_id}"
    assert len(first_id) == 10 and first_id == deployment_spec.deployed_model_id(plain(first_inputs))
    assert fake.traffic(ENDPOINT) == {first_id: 100}
    assert fake.deployed(ENDPOINT)[first_id].dedicated_resources.max_replica_count == 2
    assert plain(first.properties)["traffic_percent"] == 100

    # Refresh: what the endpoint reports now.
    fake.endpoints[ENDPOINT].deployed_models[0].status.available_replica_count = 2
    refreshed = host.read(first.id, first.properties)
    assert refreshed.id == first.id and plain(refreshed.properties)["available_replicas"] == 2

    # A retraining: a new version replaces the deployment, created before the old one is deleted.
    second_inputs = host.check(recorded("2"), olds=first.properties).inputs
    diff = host.diff(first.id, first.properties, second_inputs)
    assert "model" in diff.replaces and not diff.deleteBeforeReplace
    second = host.create(second_inputs)
    second_id = plain(second.properties)["deployed_model_id"]
    assert second_id != first_id
    assert set(fake.deployed(ENDPOINT)) == {first_id, second_id}  # both serve during the swap
    assert fake.traffic(ENDPOINT) == {second_id: 100}
    host.delete(first.id, first.properties)
    assert list(fake.deployed(ENDPOINT)) == [second_id]
    assert fake.models is not None and fake.models.deployed == {f"{MODEL}@2"}

    # Only the waits changed: an update in place that touches nothing remote.
    calls = len(fake.calls)
    quicker = host.check(recorded("2", timeout_seconds=60), olds=second.properties).inputs
    assert list(host.diff(second.id, second.properties, quicker).replaces) == []
    updated = host.update(second.id, second.properties, quicker)
    assert plain(updated.properties)["timeout_seconds"] == 60
    assert plain(updated.properties)["deployed_model_id"] == second_id and len(fake.calls) == calls

    # More replicas: scaled in place (MutateDeployedModel), the same DeployedModel keeps all the traffic.
    wider = host.check(recorded("2", timeout_seconds=60, max_replica_count=4), olds=updated.properties).inputs
    assert list(host.diff(second.id, updated.properties, wider).replaces) == []
    scaled = host.update(second.id, updated.properties, wider)
    assert [method for method, _ in fake.calls[calls:]].count("MutateDeployedModel") == 1
    resources = fake.deployed(ENDPOINT)[second_id].dedicated_resources
    assert (resources.min_replica_count, resources.max_replica_count) == (1, 4)
    assert plain(scaled.properties)["max_replica_count"] == 4
    assert plain(scaled.properties)["deployed_model_id"] == second_id and fake.traffic(ENDPOINT) == {
        second_id: 100
    }
    assert "scaled" in host.stderr()

    # Destroy: the last model goes with its traffic; nothing bills.
    host.delete(second.id, scaled.properties)
    assert fake.deployed(ENDPOINT) == {} and fake.traffic(ENDPOINT) == {}
    assert fake.models.deployed == set()
    assert host.read(second.id, scaled.properties).id == ""
    host.delete(second.id, scaled.properties)  # gone already counts as done
    assert "undeployed: its nodes no longer bill" in host.stderr()


def test_an_interrupted_up_is_adopted_not_deployed_twice(start_host, fake: FakeEndpointService) -> None:
    host = start_host(VERTEX_AI_EMULATOR_HOST=fake.start())
    fake.operation_polls = 10**6  # the deploy outlives the provider's wait, as when `up` is interrupted
    inputs = host.check(recorded("1", timeout_seconds=1)).inputs
    with pytest.raises(grpc.RpcError) as raised:
        host.create(inputs)
    assert "had not finished" in raised.value.details()
    assert fake.deployed(ENDPOINT) == {}

    # The next up, while the first deploy still runs: the same id is refused, so it waits for that deploy.
    finisher = threading.Timer(1.0, fake.operations.finish_all)
    finisher.start()
    patient = host.check(recorded("1", timeout_seconds=30)).inputs
    adopted = host.create(patient)
    finisher.join()
    deployed_id = plain(adopted.properties)["deployed_model_id"]
    assert deployment_spec.deployed_model_id(plain(inputs)) == deployed_id
    assert fake.methods().count("DeployModel") == 2 and list(fake.deployed(ENDPOINT)) == [deployed_id]
    assert "being deployed already" in host.stderr()

    # And once it has finished, another up adopts it without a DeployModel.
    again = host.create(patient)
    assert again.id == adopted.id and fake.methods().count("DeployModel") == 2
    assert "adopting DeployedModel" in host.stderr()


@pytest.mark.parametrize(
    ("extra", "field", "reason"),
    [
        ({"min_replica_count": 0}, "min_replica_count", ">= 1"),
        ({"max_replica_count": 1, "min_replica_count": 2}, "max_replica_count", "below"),
        ({"accelerator_type": "NVIDIA_L4", "accelerator_count": 1}, "machine_type", "cannot take"),
        (
            {"spot": True, "reservation_affinity": {"type": "ANY_RESERVATION"}},
            "reservation_affinity",
            "Spot",
        ),
    ],
)
def test_check_names_what_vertex_would_refuse(checking_host, extra, field, reason) -> None:
    props = plain(recorded("1"))
    props.update(extra)
    news = struct_pb2.Struct()
    news.update(props)
    failures = [(f.property, f.reason) for f in checking_host.check(news).failures]
    assert any(p == field and reason in r for p, r in failures), failures


def test_the_prod_programs_deployment_passes_check_in_a_first_preview(checking_host) -> None:
    from infra.stack import build
    from tests.stack.conftest import stack_config

    cfg = stack_config("prod", endpoint={"machineType": "n1-standard-4", "maxReplicas": 2})
    sent = run_program(lambda: build(cfg), stack="prod", preview=True).one(RESOURCE_TYPE).struct
    # A first preview: the model version does not exist yet (the endpoint's name is the stack's own).
    assert plain(sent)["model"] == UNKNOWN and plain(sent)["endpoint"].endswith("/endpoints/314722090")
    checked = checking_host.check(sent)
    assert [(f.property, f.reason) for f in checked.failures] == []


def test_check_prices_the_node_from_the_billing_catalog_and_holds_max_hourly_usd(
    start_host, fake: FakeEndpointService
) -> None:
    # The real host's check reads the fake Billing Catalog (real CloudCatalogClient) beside the endpoints;
    # its SKUs are worded as billing records show them (tests/fakes/prediction_skus.py), with test prices.
    catalog = FakeCloudCatalog()
    add_prediction_skus(catalog)
    host = start_host(VERTEX_AI_EMULATOR_HOST=fake.start(catalog.handler()))
    node = 2 * N1_CORE + 7.5 * N1_RAM  # n1-standard-2: 2 vCPUs, 7.5 GiB
    assert list(host.check(recorded("1")).failures) == []
    assert f"costs USD {node:.4f} per node hour (Cloud Billing Catalog" in host.stderr()
    (failure,) = host.check(recorded("1", max_hourly_usd=0.1)).failures
    assert failure.property == "max_hourly_usd"
    assert f"costs USD {2 * node:.2f}/h at 2 replicas, above max_hourly_usd USD 0.10" in failure.reason
    assert catalog.methods() == ["ListSkus"]  # listed once per provider process
