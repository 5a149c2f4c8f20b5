"""dataReplicas: the data job runs a chief and replicas-1 workers of one machine, into the same data dir."""

from __future__ import annotations

import pytest

from infra.config import ConfigError
from tests.stack.conftest import cached_run, run_stack, stack_config
from tests.stack.test_stack import job


def test_one_data_replica_by_default() -> None:
    assert stack_config("dev").data.replicas == 1
    pools = job(cached_run("dev"), "data-prep").inputs["worker_pools"]
    assert len(pools) == 1 and pools[0].get("replica_count", 1) == 1


@pytest.mark.parametrize("stack", ["dev", "local"])
def test_more_data_replicas_are_workers_of_the_same_machine(stack: str) -> None:
    one = job(cached_run(stack), "data-prep").inputs["worker_pools"][0]
    chief, workers = job(run_stack(stack, dataReplicas=3), "data-prep").inputs["worker_pools"]
    assert workers["replica_count"] == 2
    assert {**workers, "replica_count": 1} == {**chief, "replica_count": 1}
    # Any replica count writes the same data set: the data dir (and so the training job's inputs) stay.
    assert chief == one


BAD = [
    ({"dataReplicas": 0}, "greater than 0"),
    ({"dataReplicas": 1.5}, "whole number"),
    ({"dataReplicas": "many"}, "number"),
    ({"dataReplicas": 2, "dataSource": "none"}, "only used when the stack prepares data"),
    ({"dataReplica": 2}, "dataReplicas"),  # a near miss is still an unknown key, and the message names ours
]


@pytest.mark.parametrize(("overrides", "words"), BAD)
def test_bad_data_replicas_fail_naming_the_key(overrides: dict, words: str) -> None:
    with pytest.raises(ConfigError) as raised:
        stack_config("dev", **overrides)
    assert "dataReplica" in str(raised.value) and words in str(raised.value)
