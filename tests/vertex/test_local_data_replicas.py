"""The data job with two replicas through the real local runner: each converts its shards, the chief waits."""

import json

import pytest

from infra.vertex.provider import CustomJobProvider
from tests.vertex.test_local_runner import local_pool, local_props


@pytest.mark.tensorflow  # its replicas run trainer.create_tfrecords (tests/tensorflow_rule.py)
def test_two_local_data_replicas_write_one_data_set(tmp_path):
    out = tmp_path / "data"
    args = ["--source", "synthetic", "--count", "24", "--output", str(out), "--image-size", "32"]
    command = {"command": ["python", "-m", "trainer.create_tfrecords"], "env": {"PYTHONUNBUFFERED": "1"}}
    data_pool = local_pool("", **command, args=[*args, "--shard-size", "4", "--workers", "1"])
    created = CustomJobProvider().create(
        local_props(tmp_path, [data_pool, {**data_pool, "replica_count": 1}], timeout_seconds=600)
    )
    assert created.outs["state"] == "JOB_STATE_SUCCEEDED", created.outs["error"]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["counts"] == {"train": {"cats": 10, "dogs": 10}, "valid": {"cats": 2, "dogs": 2}}
    assert meta["shards"] == {"train": 5, "valid": 1}
    logs = {p.name: p.read_text() for p in tmp_path.rglob("*.log") if p.name.startswith("workerpool")}
    assert len(logs) == 2, sorted(p.name for p in tmp_path.rglob("*.log"))
    chief = next(text for name, text in logs.items() if name.startswith("workerpool0"))
    worker = next(text for name, text in logs.items() if name.startswith("workerpool1"))
    assert "replica 1/2: 3 of 6 shard(s) to write" in chief and "wrote" in chief
    assert "replica 2/2: 3 of 6 shard(s) to write" in worker and "wrote" not in worker
