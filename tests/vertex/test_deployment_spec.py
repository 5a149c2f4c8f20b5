"""The deployment provider's pure rules: the id an interrupted up finds again, and the traffic split that
undeploys a model (endpoint_service.proto: it must unassign the model's traffic and add up to 100)."""

from __future__ import annotations

import pytest

from infra.guard.deployed_models import traffic_without
from infra.vertex.deployment import spec

BASE = {
    "project": "p",
    "region": "us-central1",
    "endpoint": "projects/p/locations/us-central1/endpoints/1",
    "model": "projects/p/locations/us-central1/models/m@1",
    "machine_type": "n1-standard-2",
    "min_replica_count": 1,
}


def test_the_id_is_ten_digits_from_the_deployed_inputs_only() -> None:
    first = spec.deployed_model_id(BASE)
    assert len(first) == 10 and first.isdigit() and first[0] != "0"
    assert spec.deployed_model_id({**BASE, "min_replica_count": 1.0, "timeout_seconds": 5}) == first
    assert spec.deployed_model_id({**BASE, "model": BASE["model"][:-1] + "2"}) != first


@pytest.mark.parametrize(
    ("split", "ids", "removed", "expected"),
    [
        ({"a": 100}, ["a"], "a", {}),  # the last model: Vertex empties the split
        ({"b": 100}, ["a", "b"], "a", {}),  # no traffic: the split stays as it is
        ({"a": 50, "b": 30, "c": 20}, ["a", "b", "c"], "a", {"b": 60, "c": 40}),
        ({"a": 34, "b": 33, "c": 33}, ["a", "b", "c"], "a", {"b": 50, "c": 50}),
        ({"a": 100}, ["a", "b"], "a", {"b": 100}),  # nobody else holds traffic: the other takes it
    ],
)
def test_traffic_without(split, ids, removed, expected) -> None:
    out = traffic_without(split, ids, removed)
    assert out == expected
    assert not out or (sum(out.values()) == 100 and removed not in out)


def test_a_model_from_another_region_is_named() -> None:
    failures = spec.validate({**BASE, "model": "projects/p/locations/europe-west4/models/m@1"})
    assert failures == [("model", "model is in europe-west4, not in the deployment's region us-central1")]
    assert spec.validate(BASE) == []
