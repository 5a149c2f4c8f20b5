"""`make plan` and the stack's online deployment (vertex-training:endpoint): its node-hour price and the
hourly and monthly figures at min and max replicas where a dated source holds the price, else why not;
maxHourlyUsd applies, maxCostUsd does not (said)."""

from __future__ import annotations

import json

import pytest

from infra.plan.__main__ import main
from infra.vertex.cost import pricing
from tests.plan.conftest import dev_with, write_stack

SERVING = {"machineType": "n1-standard-2", "minReplicas": 1, "maxReplicas": 3}


def plan(capsys, tmp_path, *args: str, **overrides):
    root = write_stack(tmp_path, "dev", dev_with(registerModel=True, **overrides))
    code = main(["--stack", "dev", *args], root=root)
    out = capsys.readouterr().out
    return code, (json.loads(out) if "--json" in args else out)


@pytest.fixture(autouse=True)
def no_catalog_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(project: str | None) -> list:
        raise AssertionError("the plan read the Cloud Billing Catalog")

    monkeypatch.setattr(pricing, "list_vertex_skus", refuse)


def test_without_a_sourced_price_the_plan_says_so_and_why(capsys, tmp_path) -> None:
    code, found = plan(capsys, tmp_path, "--json", endpoint=SERVING)
    (serving,) = found["serving"]
    assert code == 0 and serving["name"] == "deployment" and serving["kind"] == "DeployedModel"
    assert (serving["min_replicas"], serving["max_replicas"], serving["machine_type"]) == (
        1,
        3,
        "n1-standard-2",
    )
    assert serving["node_hourly_usd"] is None and serving["hourly_usd_at_max"] is None
    assert serving["unpriced"].startswith(
        "n1-standard-2 in us-central1: no row in Vertex AI prediction prices"
    )
    assert {"type": "gcp:vertex/aiEndpoint:AiEndpoint", "name": "endpoint"} in found["resources"]
    code, text = plan(capsys, tmp_path, endpoint=SERVING)
    assert "Online serving (billed every hour it is deployed, requests or not" in text
    assert "no sourced price, here or at preview (n1-standard-2 in us-central1" in text
    assert "maxCostUsd does not apply: a deployment has no end" in text


def test_a_sourced_price_gives_the_node_hour_and_monthly_figures_at_min_and_max(
    capsys, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A row as one read from the price page would be (test data, shown to no one).
    monkeypatch.setitem(pricing.PREDICTION_TABLE, "us-central1", {"n1-standard-2": 0.5})
    code, found = plan(capsys, tmp_path, "--json", endpoint={**SERVING, "maxHourlyUsd": 2})
    (serving,) = found["serving"]
    assert code == 0 and serving["node_hourly_usd"] == 0.5
    assert (serving["hourly_usd_at_min"], serving["hourly_usd_at_max"]) == (0.5, 1.5)
    assert (serving["monthly_usd_at_most_at_min"], serving["monthly_usd_at_most_at_max"]) == (372.0, 1116.0)
    code, text = plan(capsys, tmp_path, endpoint={**SERVING, "maxHourlyUsd": 2})
    assert "USD 0.50/h, at most USD 372.00/month at 1 replica(s)" in text
    assert "USD 1.50/h, at most USD 1116.00/month at 3 replica(s)" in text
    assert "maxHourlyUsd: USD 2.00/h at max replicas" in text


def test_a_deployment_above_max_hourly_usd_is_refused_naming_the_key(
    capsys, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(pricing.PREDICTION_TABLE, "us-central1", {"n1-standard-2": 0.5})
    code, found = plan(capsys, tmp_path, "--json", endpoint={**SERVING, "maxHourlyUsd": 1})
    assert code == 1
    (error,) = found["errors"]
    assert error["key"] == "vertex-training:endpoint.maxHourlyUsd" and "USD 1.50/h at 3" in error["problem"]


def test_a_stack_without_the_key_plans_no_serving(capsys, tmp_path) -> None:
    code, found = plan(capsys, tmp_path, "--json")
    assert code == 0 and found["serving"] == []
