"""Endpoints as leftovers: every endpoint in the stack's regions that carries its labels or serves a version
of its model (deployed by hand too), each deployed model with its replicas, its price or "no sourced price",
and the command that undeploys it (fake EndpointService, the real client)."""

from __future__ import annotations

import pytest

from infra.vertex.cost import pricing
from infra.vertex.cost.serving import CATALOG_SOURCE
from tests.fakes.prediction_skus import N1_CORE, N1_RAM, add_prediction_skus
from tests.leftovers.conftest import FALLBACK, HOME, LABELS, OTHER, STACK, Cloud, parent


def deploy(cloud: Cloud, endpoint: str, model: str, replicas: int = 1) -> str:
    return cloud.endpoints.deploy_now(endpoint, model, replicas, replicas + 1)


def test_a_model_deployed_by_hand_and_the_stacks_endpoint_are_listed_with_the_undeploy_command(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    own = cloud.endpoints.add_endpoint(f"{parent(HOME)}/endpoints/1", LABELS).name
    own_id = deploy(cloud, own, f"{parent(HOME)}/models/vertex-training-{STACK}@2", replicas=2)
    # By hand, on an unlabelled endpoint in the fallback region, the model named by project number.
    by_hand = cloud.endpoints.add_endpoint(f"{parent(FALLBACK)}/endpoints/2").name
    hand_id = deploy(cloud, by_hand, f"projects/12345/locations/{FALLBACK}/models/vertex-training-{STACK}@1")
    # Not the stack's: another stack's endpoint, another model on an unlabelled one.
    deploy(cloud, cloud.endpoints.add_endpoint(f"{parent(HOME)}/endpoints/3", OTHER).name, "m@1")
    deploy(
        cloud, cloud.endpoints.add_endpoint(f"{parent(HOME)}/endpoints/4").name, f"{parent(HOME)}/models/x@1"
    )
    empty = cloud.endpoints.add_endpoint(f"{parent(FALLBACK)}/endpoints/5", LABELS).name

    code, report = cloud.json(capsys)
    assert code == 1 and report["cannot_tell"] == []
    items = {i["name"].split(" ")[0]: i for i in report["items"]}
    assert set(items) == {f"{own}/deployedModels/{own_id}", f"{by_hand}/deployedModels/{hand_id}", empty}
    mine = items[f"{own}/deployedModels/{own_id}"]
    assert (mine["kind"], mine["region"], mine["bills"]) == ("DeployedModel", HOME, True)
    assert mine["state"] == "2 up of 2-3 replicas, 100% traffic"
    assert mine["cost"] == "no sourced price (2 replica(s) of n1-standard-2, every hour)"
    assert (
        mine["remove"] == f"gcloud ai endpoints undeploy-model 1 --region={HOME} --deployed-model-id={own_id}"
    )
    hand = items[f"{by_hand}/deployedModels/{hand_id}"]
    assert "deployed by hand" in hand["name"] and hand["region"] == FALLBACK
    assert (items[empty]["bills"], items[empty]["state"]) == (False, "no deployed model")

    assert cloud.leftovers() == 1
    text = capsys.readouterr().out
    assert "gcloud ai endpoints undeploy-model 2" in text and "DeployedModel" in text
    closing = f"Stack {STACK}: 2 still bill: 2 deployed model(s) billing every hour (--undeploy stops them)"
    assert f"{closing}, 1 free." in text


def test_a_sourced_prediction_price_gives_the_hourly_figure(
    cloud: Cloud, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A row as one read from the price page would be (test data, not a price shown to anyone).
    monkeypatch.setitem(pricing.PREDICTION_TABLE, HOME, {"n1-standard-2": 0.5})
    own = cloud.endpoints.add_endpoint(f"{parent(HOME)}/endpoints/1", LABELS).name
    deploy(cloud, own, f"{parent(HOME)}/models/vertex-training-{STACK}@1", replicas=2)
    code, report = cloud.json(capsys)
    (item,) = report["items"]
    assert (code, item["hourly_usd"], item["monthly_usd"]) == (1, 1.0, 744.0)
    assert item["cost"] == "USD 1.00/h (2 replica(s) of n1-standard-2), every hour"
    assert item["price_source"].startswith(
        "Vertex AI prediction prices, https://cloud.google.com/vertex-ai/pricing"
    )


def test_the_billing_catalogs_prediction_skus_price_a_deployed_model(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    # Worded as billing records show them (tests/fakes/prediction_skus.py); test prices.
    add_prediction_skus(cloud.catalog)
    pricing.Catalog.forget()
    try:
        own = cloud.endpoints.add_endpoint(f"{parent(HOME)}/endpoints/1", LABELS).name
        deploy(cloud, own, f"{parent(HOME)}/models/vertex-training-{STACK}@1", replicas=2)
        code, report = cloud.json(capsys)
    finally:
        pricing.Catalog.forget()
    (item,) = report["items"]
    node = 2 * N1_CORE + 7.5 * N1_RAM  # n1-standard-2: 2 vCPUs, 7.5 GiB
    assert code == 1 and item["hourly_usd"] == pytest.approx(2 * node)
    assert item["price_source"] == CATALOG_SOURCE
    assert item["cost"] == f"USD {2 * node:.2f}/h (2 replica(s) of n1-standard-2), every hour"


def test_an_endpoint_listing_that_fails_is_named_and_exits_2(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    import grpc

    cloud.endpoints.fail("ListEndpoints", grpc.StatusCode.PERMISSION_DENIED, times=1)
    code, report = cloud.json(capsys)
    assert code == 2
    assert any(entry.startswith(f"endpoints ({HOME} list_endpoints:") for entry in report["cannot_tell"])


def test_undeploy_stops_every_deployed_model_of_the_stack_and_lists_again(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--undeploy` undeploys what the listing found (the kill switch's undeploy: traffic moved off each model
    first), waits until none is listed, and lists again: nothing bills; another stack's model stays."""
    own = cloud.endpoints.add_endpoint(f"{parent(HOME)}/endpoints/1", LABELS).name
    deploy(cloud, own, f"{parent(HOME)}/models/vertex-training-{STACK}@1")
    deploy(cloud, own, f"{parent(HOME)}/models/vertex-training-{STACK}@2")  # takes all the traffic
    by_hand = cloud.endpoints.add_endpoint(f"{parent(FALLBACK)}/endpoints/2").name
    hand_id = deploy(cloud, by_hand, f"projects/12345/locations/{FALLBACK}/models/vertex-training-{STACK}@1")
    other = cloud.endpoints.add_endpoint(f"{parent(HOME)}/endpoints/3", OTHER).name
    other_id = deploy(cloud, other, "m@1")
    # Operations take two reads: the model with the traffic is refused while the other still leaves its
    # endpoint, and asked again once it is gone.
    cloud.endpoints.operation_polls = 2

    assert cloud.leftovers("--undeploy") == 0
    out = capsys.readouterr().out
    assert out.count("undeploying: ") == 3 and f"undeploying: {by_hand}/deployedModels/{hand_id}" in out
    assert "still has 100% of the traffic" in out and "asking again for the refused ones" in out
    after = out.split("After undeploying:")[1]
    assert "DeployedModel" not in after and "nothing bills" in after
    assert cloud.endpoints.deployed(own) == {} and cloud.endpoints.deployed(by_hand) == {}
    assert list(cloud.endpoints.deployed(other)) == [other_id]


def test_undeploy_waits_until_the_operations_end(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    """UndeployModel is a long-running operation: the model is listed until it ends (here after two reads
    of its endpoint), and the command waits for that before it lists again."""
    own = cloud.endpoints.add_endpoint(f"{parent(HOME)}/endpoints/1", LABELS).name
    deploy(cloud, own, f"{parent(HOME)}/models/vertex-training-{STACK}@1")
    cloud.endpoints.operation_polls = 2
    assert cloud.leftovers("--undeploy") == 0
    out = capsys.readouterr().out
    assert "waiting up to 600 s for 1 deployed model(s) to go" in out
    assert "still deployed" not in out and cloud.endpoints.deployed(own) == {}


def test_undeploy_with_nothing_deployed_says_so(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    assert cloud.leftovers("--undeploy") == 0
    assert "no deployed model to undeploy" in capsys.readouterr().out
