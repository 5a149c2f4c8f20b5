"""The fake EndpointService itself, driven by the real EndpointServiceClient: the rules of
endpoint_service.proto that the deployment provider, the kill switch and leftovers rely on."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.endpoint_service.transports import EndpointServiceGrpcTransport

from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.model_service import FakeModelService

LOCATION = "projects/p/locations/us-central1"
ENDPOINT = f"{LOCATION}/endpoints/42"
MODEL = f"{LOCATION}/models/m"


@pytest.fixture(autouse=True)
def fast_operations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client polls a long-running operation after about a second; the fake's are done by then."""
    real_sleep = time.sleep
    monkeypatch.setattr("google.api_core.retry.retry_unary.time.sleep", lambda s: real_sleep(min(s, 0.01)))


@pytest.fixture
def fake() -> Iterator[FakeEndpointService]:
    models = FakeModelService()
    for _ in range(2):
        models.add_version(LOCATION, "m")
    service = FakeEndpointService(models)
    service.add_endpoint(ENDPOINT, {"pulumi_stack": "dev"})
    yield service
    service.stop()


@pytest.fixture
def client(fake: FakeEndpointService) -> aiplatform_v1.EndpointServiceClient:
    channel = grpc.insecure_channel(fake.start())
    return aiplatform_v1.EndpointServiceClient(transport=EndpointServiceGrpcTransport(channel=channel))


def deployed(version: str, deployed_id: str = "") -> aiplatform_v1.DeployedModel:
    return aiplatform_v1.DeployedModel(
        id=deployed_id,
        model=f"{MODEL}@{version}",
        dedicated_resources=aiplatform_v1.DedicatedResources(
            machine_spec=aiplatform_v1.MachineSpec(machine_type="n1-standard-2"), min_replica_count=1
        ),
    )


def deploy(client, version: str, deployed_id: str = "", split: dict[str, int] | None = None):
    operation = client.deploy_model(
        endpoint=ENDPOINT, deployed_model=deployed(version, deployed_id), traffic_split=split or {}
    )
    return operation.result(timeout=10)


def test_deploy_is_an_operation_whose_end_adds_the_model_and_its_traffic(fake, client) -> None:
    operation = client.deploy_model(
        endpoint=ENDPOINT, deployed_model=deployed("1", "11"), traffic_split={"0": 100}
    )
    assert fake.deployed(ENDPOINT) == {}  # pending: nothing changed yet
    assert operation.result(timeout=10).deployed_model.id == "11"
    endpoint = client.get_endpoint(name=ENDPOINT)
    assert [d.id for d in endpoint.deployed_models] == ["11"]
    assert endpoint.deployed_models[0].model_version_id == "1"
    assert endpoint.deployed_models[0].dedicated_resources.max_replica_count == 1  # defaults to min
    assert dict(endpoint.traffic_split) == {"11": 100}
    assert fake.models is not None and fake.models.deployed == {f"{MODEL}@1"}


def test_a_split_must_add_up_to_100_and_name_deployed_models(fake, client) -> None:
    with pytest.raises(gexc.InvalidArgument, match="add up to 100"):
        client.deploy_model(endpoint=ENDPOINT, deployed_model=deployed("1"), traffic_split={"0": 60})
    with pytest.raises(gexc.InvalidArgument, match="not on the endpoint"):
        client.deploy_model(endpoint=ENDPOINT, deployed_model=deployed("1"), traffic_split={"0": 50, "7": 50})
    # An empty split leaves the endpoint's as it was: the new model takes no traffic.
    deploy(client, "1", "11", {"0": 100})
    deploy(client, "2", "22")
    assert fake.traffic(ENDPOINT) == {"11": 100}


def test_ids_are_digits_and_unique_even_while_deploying(fake, client) -> None:
    with pytest.raises(gexc.InvalidArgument, match="1-10 digits"):
        client.deploy_model(endpoint=ENDPOINT, deployed_model=deployed("1", "12345678901"))
    fake.operation_polls = 5
    client.deploy_model(endpoint=ENDPOINT, deployed_model=deployed("1", "11"), traffic_split={"0": 100})
    with pytest.raises(gexc.AlreadyExists):
        client.deploy_model(endpoint=ENDPOINT, deployed_model=deployed("2", "11"))
    fake.operations.finish_all()
    assert list(fake.deployed(ENDPOINT)) == ["11"]


def test_a_missing_version_or_endpoint_is_not_found(fake, client) -> None:
    with pytest.raises(gexc.NotFound):
        client.deploy_model(endpoint=ENDPOINT, deployed_model=deployed("9"))
    with pytest.raises(gexc.NotFound):
        client.get_endpoint(name=f"{LOCATION}/endpoints/43")


def test_undeploying_a_model_with_traffic_needs_a_split_that_removes_it(fake, client) -> None:
    deploy(client, "1", "11", {"0": 100})
    deploy(client, "2", "22", {"11": 50, "0": 50})
    with pytest.raises(gexc.FailedPrecondition, match="still has 50%"):
        client.undeploy_model(endpoint=ENDPOINT, deployed_model_id="11")
    client.undeploy_model(endpoint=ENDPOINT, deployed_model_id="11", traffic_split={"22": 100}).result(10)
    assert list(fake.deployed(ENDPOINT)) == ["22"] and fake.traffic(ENDPOINT) == {"22": 100}
    assert fake.models is not None and fake.models.deployed == {f"{MODEL}@2"}
    # The last one goes with its traffic, and the split ends up empty.
    client.undeploy_model(endpoint=ENDPOINT, deployed_model_id="22").result(10)
    assert fake.deployed(ENDPOINT) == {} and fake.traffic(ENDPOINT) == {}
    assert fake.models.deployed == set()
    with pytest.raises(gexc.NotFound):
        client.undeploy_model(endpoint=ENDPOINT, deployed_model_id="22")


def test_list_filters_on_labels(fake, client) -> None:
    fake.add_endpoint(f"{LOCATION}/endpoints/43", {"pulumi_stack": "prod"})
    fake.add_endpoint("projects/p/locations/europe-west4/endpoints/44", {"pulumi_stack": "dev"})
    found = client.list_endpoints(
        request=aiplatform_v1.ListEndpointsRequest(parent=LOCATION, filter='labels.pulumi_stack="dev"')
    )
    assert [e.name for e in found] == [ENDPOINT]
    assert len(list(client.list_endpoints(parent=LOCATION))) == 2


def test_mutate_changes_only_the_replica_counts_the_mask_names(fake, client) -> None:
    """MutateDeployedModel: "Only the following fields can be mutated: min_replica_count ...,
    max_replica_count ..." (endpoint_service.proto); a long-running operation; the mask is relative to the
    DeployedModel."""
    deploy(client, "1", "11", {"0": 100})

    def mutate(paths: list[str], deployed_id: str = "11", low: int = 2, high: int = 3):
        resources = aiplatform_v1.DedicatedResources(
            machine_spec=aiplatform_v1.MachineSpec(machine_type="n1-standard-8"),
            min_replica_count=low,
            max_replica_count=high,
        )
        return client.mutate_deployed_model(
            endpoint=ENDPOINT,
            deployed_model=aiplatform_v1.DeployedModel(id=deployed_id, dedicated_resources=resources),
            update_mask={"paths": paths},
        )

    operation = mutate(["dedicated_resources.max_replica_count"])
    operation.result(timeout=10)
    resources = fake.deployed(ENDPOINT)["11"].dedicated_resources
    assert (resources.min_replica_count, resources.max_replica_count) == (1, 3)  # min was not in the mask
    assert resources.machine_spec.machine_type == "n1-standard-2"
    with pytest.raises(gexc.InvalidArgument):
        mutate(["dedicated_resources.machine_spec"])
    with pytest.raises(gexc.InvalidArgument):
        mutate(["dedicated_resources.min_replica_count"], low=5)  # above max 3
    with pytest.raises(gexc.NotFound):
        mutate(["dedicated_resources.max_replica_count"], deployed_id="99")
