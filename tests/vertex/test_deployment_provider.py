"""The deployment provider in-process against the fake EndpointService (the real client): a transient error
is retried, a quota refusal is one paragraph naming maxReplicas and the swap, a long deploy says it is still
going, and a deploy that outlives the provider's wait is adopted by the next `up`."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest

from infra.vertex.deployment import service
from infra.vertex.deployment.service import DeploymentError
from infra.vertex.deployment_provider import DeploymentProvider
from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.model_service import FakeModelService

LOCATION = "projects/p/locations/us-central1"
ENDPOINT = f"{LOCATION}/endpoints/7"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpointService]:
    models = FakeModelService()
    models.add_version(LOCATION, "m")
    endpoints = FakeEndpointService(models)
    endpoints.add_endpoint(ENDPOINT)
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", endpoints.start())
    real_sleep = time.sleep
    monkeypatch.setattr("infra.dynamic.retries.time.sleep", lambda s: real_sleep(min(s, 0.01)))
    yield endpoints
    endpoints.stop()


def props(**extra: object) -> dict[str, object]:
    return {
        "project": "p",
        "region": "us-central1",
        "endpoint": ENDPOINT,
        "model": f"{LOCATION}/models/m@1",
        "machine_type": "n1-standard-2",
        "min_replica_count": 1,
        "poll_interval_seconds": 0.02,
        **extra,
    }


def test_a_transient_error_is_retried_once_and_the_deploy_goes_on(fake, capsys) -> None:
    fake.fail("DeployModel", grpc.StatusCode.UNAVAILABLE, times=1)
    created = DeploymentProvider().create(props())
    assert fake.methods().count("DeployModel") == 2
    assert fake.traffic(ENDPOINT) == {created.outs["deployed_model_id"]: 100}
    assert "UNAVAILABLE, retrying" in capsys.readouterr().err


def test_a_quota_refusal_names_max_replicas_and_the_swap(fake) -> None:
    message = "The following quotas are exceeded: CustomModelServingCPUsPerProjectPerRegion"
    fake.fail("DeployModel", grpc.StatusCode.RESOURCE_EXHAUSTED, times=1, message=message)
    with pytest.raises(DeploymentError) as raised:
        DeploymentProvider().create(props())
    text = str(raised.value)
    assert message in text and "maxReplicas" in text and "old and the new deployment" in text
    assert "\n" not in text


def test_a_long_deploy_says_it_is_still_going(fake, monkeypatch, capsys) -> None:
    monkeypatch.setattr(service, "HEARTBEAT_SECONDS", 0.05)
    fake.operation_polls = 8
    DeploymentProvider().create(props())
    err = capsys.readouterr().err
    assert "still deploying projects/p/locations/us-central1/models/m@1" in err


def test_a_deploy_that_outlives_the_wait_is_adopted_by_the_next_up(fake, capsys) -> None:
    fake.operation_polls = 10**6
    with pytest.raises(DeploymentError, match="had not finished"):
        DeploymentProvider().create(props(timeout_seconds=0))
    fake.operations.finish_all()
    created = DeploymentProvider().create(props(timeout_seconds=0))
    assert fake.methods().count("DeployModel") == 1
    assert list(fake.deployed(ENDPOINT)) == [created.outs["deployed_model_id"]]
    assert "adopting DeployedModel" in capsys.readouterr().err


def test_delete_moves_traffic_to_a_model_deployed_beside_it(fake) -> None:
    created = DeploymentProvider().create(props())
    other = fake.deploy_now(ENDPOINT, f"{LOCATION}/models/m@1", traffic=False)  # by hand, no traffic
    DeploymentProvider().delete(created.id, created.outs)
    assert list(fake.deployed(ENDPOINT)) == [other] and fake.traffic(ENDPOINT) == {other: 100}
    (undeploy,) = [r for m, r in fake.calls if m == "UndeployModel"]
    assert dict(undeploy.traffic_split) == {other: 100}


def test_a_lost_deploy_response_is_not_deployed_twice(fake, capsys) -> None:
    """The call took effect but its answer was lost (UNAVAILABLE after applying): the retry meets the same id
    (ALREADY_EXISTS) and waits for that deploy instead of making another."""
    fake.fail("DeployModel", grpc.StatusCode.UNAVAILABLE, times=1, applied=True)
    created = DeploymentProvider().create(props())
    assert list(fake.deployed(ENDPOINT)) == [created.outs["deployed_model_id"]]
    assert "being deployed already" in capsys.readouterr().err
