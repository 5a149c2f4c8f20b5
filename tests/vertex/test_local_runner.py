"""Local runner: real processes with Vertex's environment, records on disk, cancel."""

import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra.vertex.capacity.placement import Shape
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.provider import CustomJobProvider
from infra.vertex.runners.local.runner import LOCAL_RECORDS, LocalRunner
from tests.vertex.props import job_props, pool


def local_pool(script: str, **overrides):
    settings = {
        "machine_type": "n1-standard-4",
        "accelerator_type": None,
        "accelerator_count": 0,
        "image_uri": "trainer:local",
        "command": ["python", "-c", script],
        "args": [],
        "env": {},
    }
    return pool(**{**settings, **overrides})


def local_props(base: Path, pools: list, **overrides):
    props = job_props(
        runner="local", base_output_dir=str(base), worker_pools=pools, poll_interval_seconds=0.1
    )
    props.update(overrides)
    checked = CustomJobProvider().check({}, props)
    assert not checked.failures, checked.failures
    return checked.inputs


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# Each replica records what it saw; the chief listens on its TF_CONFIG address and each worker connects to it,
# so the job only succeeds if both ran at once and the addresses are real localhost ports.
RENDEZVOUS = textwrap.dedent(
    """
    import json, os, socket, sys, time
    tf = json.loads(os.environ["TF_CONFIG"])
    task = tf["task"]
    seen = {"tf_config": tf, "cluster_spec": json.loads(os.environ["CLUSTER_SPEC"]),
            "executable": sys.executable, "model_dir": os.environ["AIP_MODEL_DIR"],
            "checkpoint_dir": os.environ["AIP_CHECKPOINT_DIR"],
            "log_dir": os.environ["AIP_TENSORBOARD_LOG_DIR"],
            "greeting": os.environ.get("GREETING")}
    base = os.path.dirname(os.environ["AIP_MODEL_DIR"].rstrip("/"))
    out = os.path.join(base, f"{task['type']}-{task['index']}.json")
    with open(out, "w") as f:
        json.dump(seen, f)
    host, port = tf["cluster"]["chief"][0].split(":")
    if task["type"] == "chief":
        server = socket.create_server((host, int(port)))
        conn, _ = server.accept()
        assert conn.recv(5) == b"hello"
    else:
        for _ in range(200):
            try:
                socket.create_connection((host, int(port))).sendall(b"hello")
                break
            except OSError:
                time.sleep(0.05)
        else:
            sys.exit(7)
    """
)


def test_chief_and_worker_run_multi_worker_on_localhost(tmp_path):
    provider = CustomJobProvider()
    props = local_props(
        tmp_path, [local_pool(RENDEZVOUS, env={"GREETING": "hi"}), local_pool(RENDEZVOUS, replica_count=1)]
    )
    created = provider.create(props)
    assert created.outs["state"] == "JOB_STATE_SUCCEEDED", created.outs["error"]
    assert created.id.startswith("local/")
    chief = json.loads((tmp_path / "chief-0.json").read_text())
    worker = json.loads((tmp_path / "worker-0.json").read_text())
    cluster = chief["tf_config"]["cluster"]
    assert cluster == worker["tf_config"]["cluster"]
    assert len(cluster["chief"]) == 1 and len(cluster["worker"]) == 1
    assert cluster["chief"][0] != cluster["worker"][0] and cluster["chief"][0].startswith("127.0.0.1:")
    assert worker["tf_config"]["task"] == {"type": "worker", "index": 0}
    assert chief["cluster_spec"]["cluster"] == {
        "workerpool0": cluster["chief"],
        "workerpool1": cluster["worker"],
    }
    assert worker["cluster_spec"]["task"] == {"type": "workerpool1", "index": 0}
    assert chief["executable"] == sys.executable  # leading `python` runs in this virtualenv
    assert chief["model_dir"] == f"{tmp_path}/model/" == created.outs["model_dir"]
    assert chief["checkpoint_dir"] == f"{tmp_path}/checkpoints/"
    assert chief["log_dir"] == f"{tmp_path}/logs/"
    assert (chief["greeting"], worker["greeting"]) == ("hi", None)
    # A fresh runner (as in a new provider process) reads the record; delete removes it.
    assert LocalRunner(str(tmp_path)).get(created.id).state == "JOB_STATE_SUCCEEDED"
    provider.delete(created.id, created.outs)
    assert provider.read(created.id, created.outs).id == ""
    assert not any((tmp_path / LOCAL_RECORDS).iterdir())


def test_failed_local_job_raises_with_its_log(tmp_path):
    props = local_props(tmp_path, [local_pool("import sys; print('data dir is empty'); sys.exit(3)")])
    with pytest.raises(JobError) as raised:
        CustomJobProvider().create(props)
    message = str(raised.value)
    assert "JOB_STATE_FAILED" in message
    assert "workerpool0-0 exited with code 3" in message
    assert "data dir is empty" in message
    assert str(tmp_path / LOCAL_RECORDS) in message


def test_local_job_past_its_timeout_is_stopped(tmp_path):
    props = local_props(tmp_path, [local_pool("import time; time.sleep(60)")], timeout_seconds=1)
    with pytest.raises(JobError, match="exceeded its timeout of 1s"):
        CustomJobProvider().create(props)


def test_timeout_of_more_than_a_day_is_kept(tmp_path):
    # A Duration reads back as a timedelta: its .seconds would make 1 day + 1 s a 1 s timeout.
    props = local_props(tmp_path, [local_pool("import time; time.sleep(1.5)")], timeout_seconds=86401)
    outs = CustomJobProvider().create(props).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED", outs["error"]
    # The record keeps the shape the job was submitted on: a fresh process reads it, as from Vertex.
    shape = LocalRunner(str(tmp_path)).get(outs["job_name"]).shape
    assert shape == Shape("n1-standard-4", None, 0, "STANDARD")


def test_cancel_of_a_job_still_launching_signals_nothing_else(tmp_path):
    runner = LocalRunner(str(tmp_path))
    job_dir = runner.records / "launching"
    job_dir.mkdir(parents=True)
    record = {"name": "local/launching", "labels": {}, "create_time": datetime.now(UTC).isoformat()}
    (job_dir / "job.json").write_text(json.dumps(record))  # no supervisor.pid yet
    assert runner.get("local/launching").state == "JOB_STATE_PENDING"
    cancel = (
        "from infra.vertex.runners.local.runner import LocalRunner as R; "
        f"R({str(tmp_path)!r}).cancel('local/launching')"
    )
    # Its own session: a stray os.kill(0, SIGTERM) would end this process group, not pytest's.
    done = subprocess.run([sys.executable, "-c", cancel], timeout=60, start_new_session=True)
    assert done.returncode == 0
    assert (job_dir / "cancel").exists()


def wait_running(runner: LocalRunner, name: str, replicas: int) -> list[int]:
    for _ in range(100):
        status = json.loads((runner.records / name.removeprefix("local/") / "status.json").read_text())
        if status.get("state") == "JOB_STATE_RUNNING" and len(status["pids"]) == replicas:
            return list(status["pids"].values())
        time.sleep(0.1)
    raise AssertionError("local job did not start")


def test_cancel_from_another_process_kills_the_replicas(tmp_path):
    provider = CustomJobProvider()
    sleeper = local_pool("import time; time.sleep(300)")
    props = local_props(tmp_path, [sleeper, {**sleeper, "replica_count": 2}], wait=False)
    created = provider.create(props)
    runner = LocalRunner(str(tmp_path))
    pids = wait_running(runner, created.id, replicas=3)
    assert all(_alive(pid) for pid in pids)
    # An interrupted `pulumi up` run again adopts the live job instead of starting a second one.
    assert provider.create(props).id == created.id
    cancel = (
        "from infra.vertex.runners.local.runner import LocalRunner; "
        f"LocalRunner({str(tmp_path)!r}).cancel({created.id!r})"
    )
    subprocess.run([sys.executable, "-c", cancel], check=True, timeout=60)
    for _ in range(100):
        if runner.get(created.id).state == "JOB_STATE_CANCELLED":
            break
        time.sleep(0.1)
    assert runner.get(created.id).state == "JOB_STATE_CANCELLED"
    assert not any(_alive(pid) for pid in pids)
    provider.delete(created.id, created.outs)
    assert runner.get(created.id) is None


def test_delete_of_running_local_job_cancels_first(tmp_path):
    provider = CustomJobProvider()
    created = provider.create(local_props(tmp_path, [local_pool("import time; time.sleep(300)")], wait=False))
    (pid,) = wait_running(LocalRunner(str(tmp_path)), created.id, replicas=1)
    provider.delete(created.id, created.outs)
    assert not _alive(pid)
    assert LocalRunner(str(tmp_path)).get(created.id) is None
