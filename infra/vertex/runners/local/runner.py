"""CustomJobs as processes on this machine under a detached supervisor, with the environment Vertex gives."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from google.cloud import aiplatform_v1

from infra.vertex.capacity.placement import POOL_ROLES, shape_from
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.output_files import output_dirs
from infra.vertex.lifecycle.status import TERMINAL_STATES, JobStatus, now, seconds_between
from infra.vertex.runners.local.supervisor import read_json, write_json
from infra.vertex.runners.submitted import adoptable, custom_job_shape

LOCAL_PREFIX = "local/"
LOCAL_RECORDS = ".vertex-training-local"
# `python -m`/`-c` put the working directory first on sys.path; the provider's (the Pulumi program's) must not
# shadow installed packages in the supervisor or the replicas, which inherit this (Python >= 3.11).
SAFE_PATH_ENV = {"PYTHONSAFEPATH": "1"}
# A pool env entry for this runner only: the replicas' working directory (default: this process's), as the
# image's WORKDIR is on Vertex (infra/components/trainer_workdir.py). It is taken out of the replicas'
# environment, and they run without PYTHONSAFEPATH, as in the image: `python -m` puts that directory on
# sys.path, `python x.py` the script's. Relative to this process's working directory (the project root), so a
# job does not change with the clone's path; an absolute one (state written before) is taken as it is.
WORKDIR_ENV = "VERTEX_TRAINING_LOCAL_WORKDIR"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_command(command: list[str]) -> list[str]:
    """A pool's command for this machine: a leading python/python3 runs in this process's interpreter."""
    if command and command[0] in ("python", "python3"):
        return [sys.executable, *command[1:]]
    return list(command)


def replica_plan(job: aiplatform_v1.CustomJob, base_output_dir: str) -> list[dict[str, Any]]:
    """One entry per replica: task name, argv and the environment Vertex would give it, on localhost ports."""
    pools = list(job.job_spec.worker_pool_specs)
    addresses = {
        f"workerpool{i}": [f"127.0.0.1:{_free_port()}" for _ in range(pool.replica_count)]
        for i, pool in enumerate(pools)
    }
    tf_cluster = {
        POOL_ROLES[i]: addresses[f"workerpool{i}"] for i in range(len(pools)) if POOL_ROLES[i] != "evaluator"
    }
    job_spec = aiplatform_v1.CustomJobSpec.to_json(job.job_spec, indent=None)
    plan = []
    for i, pool in enumerate(pools):
        container = pool.container_spec
        for index in range(pool.replica_count):
            env = {e.name: e.value for e in container.env}
            workdir = env.pop(WORKDIR_ENV, None)
            env.update(output_dirs(base_output_dir))
            # One layout: CLUSTER_SPEC names Vertex's pools, TF_CONFIG the roles TensorFlow knows.
            env["CLUSTER_SPEC"] = _cluster_json(addresses, f"workerpool{i}", index, job_spec)
            env["TF_CONFIG"] = _cluster_json(tf_cluster, POOL_ROLES[i], index, job_spec)
            plan.append(
                {
                    "task": f"workerpool{i}-{index}",
                    "argv": local_command([*container.command, *container.args]),
                    "env": env,
                    **({"cwd": os.path.join(os.getcwd(), workdir)} if workdir else {}),
                }
            )
    return plan


def _cluster_json(cluster: dict[str, list[str]], task: str, index: int, job_spec: str) -> str:
    spec = {"cluster": cluster, "environment": "cloud", "task": {"type": task, "index": index}}
    return json.dumps({**spec, "job": job_spec})


def job_dir(base_output_dir: str, job_name: str) -> Path:
    """Where the LocalRunner keeps this job's records and replica logs."""
    return Path(base_output_dir).expanduser().absolute() / LOCAL_RECORDS / job_name.removeprefix(LOCAL_PREFIX)


class LocalRunner:
    """Replicas as processes here under a supervisor; records in <base_output_dir>/.vertex-training-local/."""

    def __init__(self, base_output_dir: str):
        self.base = Path(base_output_dir).expanduser().absolute()
        self.records = self.base / LOCAL_RECORDS

    def _dir(self, name: str) -> Path:
        return job_dir(str(self.base), name)

    def create(self, job: aiplatform_v1.CustomJob) -> JobStatus:
        job_id = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        name = LOCAL_PREFIX + job_id
        job_dir = self._dir(name)
        job_dir.mkdir(parents=True)
        record = {
            "name": name,
            "display_name": job.display_name,
            "labels": dict(job.labels),
            "shape": custom_job_shape(job),
            "create_time": now(),
            # proto-plus reads a Duration as a timedelta, whose .seconds drops whole days.
            "timeout_seconds": int(job.job_spec.scheduling.timeout.total_seconds()),
            "cwd": os.getcwd(),
            "replicas": replica_plan(job, str(self.base)),
        }
        write_json(job_dir / "job.json", record)
        write_json(job_dir / "status.json", {"state": "JOB_STATE_PENDING"})
        with open(job_dir / "supervisor.log", "ab") as log:
            supervisor = subprocess.Popen(
                [sys.executable, "-m", "infra.vertex.runners.local.supervisor", str(job_dir)],
                env={**os.environ, **SAFE_PATH_ENV},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        (job_dir / "supervisor.pid").write_text(str(supervisor.pid))
        status = self.get(name)
        assert status is not None
        return status

    def get(self, name: str) -> JobStatus | None:
        job_dir = self._dir(name)
        try:
            record = json.loads((job_dir / "job.json").read_text())
        except FileNotFoundError:
            return None
        status = read_json(job_dir / "status.json")
        state = status.get("state", "JOB_STATE_PENDING")
        error = status.get("error", "")
        cancelling = (job_dir / "cancel").exists()
        launching = (
            not (job_dir / "supervisor.pid").exists() and seconds_between(record["create_time"], "") < 60
        )
        if state not in TERMINAL_STATES and not launching:
            if not _alive(_supervisor_pid(job_dir)):
                # Re-read: the supervisor may have written its final state just before exiting.
                status = read_json(job_dir / "status.json")
                state = status.get("state", state)
                if state not in TERMINAL_STATES:
                    state = "JOB_STATE_CANCELLED" if cancelling else "JOB_STATE_FAILED"
                    error = "" if cancelling else f"the local supervisor stopped unexpectedly; see {job_dir}"
            elif cancelling:
                state = "JOB_STATE_CANCELLING"
        return JobStatus(
            name=name,
            state=state,
            console_url=job_dir.as_uri(),
            error=error,
            create_time=record["create_time"],
            start_time=status.get("start_time", ""),
            end_time=status.get("end_time", ""),
            labels=record["labels"],
            shape=shape_from(record.get("shape") or {}),
        )

    def find_by_key(self, key: str) -> JobStatus | None:
        if not self.records.is_dir():
            return None
        jobs = (self.get(LOCAL_PREFIX + d.name) for d in self.records.iterdir() if (d / "job.json").exists())
        return adoptable(jobs, key)

    def cancel(self, name: str) -> None:
        status = self.get(name)
        if status is None or status.terminal:
            return
        job_dir = self._dir(name)
        (job_dir / "cancel").touch()
        # The supervisor stops its replicas and records CANCELLED; signal the replicas too in case it hangs.
        supervisor = _supervisor_pid(job_dir)
        # No pid yet (a create still launching): the marker stops it; os.kill(0) would hit our own group.
        if supervisor > 0:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(supervisor, signal.SIGTERM)
        for pid in read_json(job_dir / "status.json").get("pids", {}).values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGTERM)

    def delete(self, name: str) -> None:
        status = self.get(name)
        if status is None:
            return
        if not status.terminal:
            raise JobError(f"Local job {name} is {status.state}; cancel it before deleting.")
        shutil.rmtree(self._dir(name), ignore_errors=True)


def _supervisor_pid(job_dir: Path) -> int:
    try:
        return int((job_dir / "supervisor.pid").read_text())
    except (FileNotFoundError, ValueError):
        return 0


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    with contextlib.suppress(ChildProcessError):
        # Reap it if this process started it, so an exited supervisor does not linger as a zombie.
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
