"""dataReplicas: the data job runs a chief and replicas-1 workers of one machine, into the same data dir."""

from __future__ import annotations

import pytest

from infra.config import ConfigError
from infra.workloads import jobs
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
    # Any replica count writes the same data set: the data dir (and so the training job's inputs) stay;
    # local replicas only share the machine's cores (below).
    assert {**chief, "args": without_workers(chief["args"])} == one


def without_workers(args: list[str]) -> list[str]:
    if "--workers" not in args:
        return args
    at = args.index("--workers")
    return args[:at] + args[at + 2 :]


@pytest.mark.parametrize(("cores", "workers"), [(8, "2"), (2, "1")])
def test_local_data_replicas_share_the_machines_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, workers: str
) -> None:
    monkeypatch.setattr(jobs, "local_cores", lambda: cores)
    local = job(run_stack("local", dataReplicas=3), "data-prep").inputs["worker_pools"]
    assert [pool["args"][-2:] for pool in local] == [["--workers", workers]] * 2
    assert local[0]["args"].count("--workers") == 1
    # Vertex replicas are machines of their own: each uses every core it has (the trainer's default).
    cloud = job(run_stack("dev", dataReplicas=3), "data-prep").inputs["worker_pools"]
    assert all("--workers" not in pool["args"] for pool in cloud)
    assert "--workers" not in job(cached_run("local"), "data-prep").inputs["worker_pools"][0]["args"]


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
