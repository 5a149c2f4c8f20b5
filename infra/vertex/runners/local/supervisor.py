"""Runs one local job's replicas and records its state, outliving the provider process that started it:
python -m infra.vertex.runners.local.supervisor <job dir> (the LocalRunner writes <job dir>/job.json first)"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

POLL_SECONDS = 0.2
# Once the chief succeeds, other replicas get this long to finish (the chief's status is the job's).
WORKER_GRACE_SECONDS = 30.0
KILL_GRACE_SECONDS = 10.0


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Whole or not at all: a reader in another process never sees half a record."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=1))
    tmp.replace(path)


def read_json(path: Path) -> dict[str, Any]:
    try:
        found: dict[str, Any] = json.loads(path.read_text())
        return found
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""


def _stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    """SIGTERM every live replica's process group, then SIGKILL what is left after a grace period."""
    for proc in procs.values():
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while time.monotonic() < deadline and any(p.poll() is None for p in procs.values()):
        time.sleep(POLL_SECONDS)
    for proc in procs.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def inherited_env(replica: dict[str, Any]) -> dict[str, str]:
    """This process's environment; a replica given its own working directory runs as in its image, where
    that directory is on sys.path (no PYTHONSAFEPATH, local_runner.WORKDIR_ENV)."""
    if "cwd" not in replica:
        return dict(os.environ)
    return {name: value for name, value in os.environ.items() if name != "PYTHONSAFEPATH"}


def supervise(job_dir: Path) -> str:
    record = json.loads((job_dir / "job.json").read_text())
    cancelled = False

    def on_term(_signum: int, _frame: object) -> None:
        nonlocal cancelled
        cancelled = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs: dict[str, Path] = {}
    for replica in record["replicas"]:
        logs[replica["task"]] = job_dir / f"{replica['task']}.log"
        with open(logs[replica["task"]], "ab") as log:
            procs[replica["task"]] = subprocess.Popen(
                replica["argv"],
                env={**inherited_env(replica), **replica["env"]},
                cwd=replica.get("cwd", record["cwd"]),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    status: dict[str, Any] = {
        "state": "JOB_STATE_RUNNING",
        "start_time": _now(),
        "pids": {task: proc.pid for task, proc in procs.items()},
        "logs": {task: str(path) for task, path in logs.items()},
    }
    write_json(job_dir / "status.json", status)
    deadline = time.monotonic() + record["timeout_seconds"]
    chief = record["replicas"][0]["task"]
    chief_done_at: float | None = None
    state, error = "JOB_STATE_SUCCEEDED", ""
    while True:
        if cancelled or (job_dir / "cancel").exists():
            state, error = "JOB_STATE_CANCELLED", ""
            break
        if time.monotonic() > deadline:
            state = "JOB_STATE_FAILED"
            error = f"the job exceeded its timeout of {record['timeout_seconds']}s and was stopped"
            break
        failed = [(t, p.returncode) for t, p in procs.items() if p.poll() is not None and p.returncode != 0]
        if failed:
            task, code = failed[0]
            state = "JOB_STATE_FAILED"
            error = f"replica {task} exited with code {code}; log {logs[task]}:\n{_tail(logs[task])}"
            break
        if procs[chief].poll() == 0:
            chief_done_at = chief_done_at or time.monotonic()
            others_done = all(p.poll() is not None for p in procs.values())
            if others_done or time.monotonic() - chief_done_at > WORKER_GRACE_SECONDS:
                break
        time.sleep(POLL_SECONDS)
    _stop(procs)
    write_json(job_dir / "status.json", {**status, "state": state, "error": error, "end_time": _now()})
    return state


if __name__ == "__main__":
    print(supervise(Path(sys.argv[1])))
