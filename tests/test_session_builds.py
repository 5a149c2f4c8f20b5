"""tests/session_builds.py: a shared run is built by one worker and read, equal, by the others."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.session_builds import built_once

REPO = Path(__file__).resolve().parents[1]


class Factory:
    """What built_once reads of pytest's TempPathFactory: a worker's base temp dir."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base


def test_the_second_worker_reads_what_the_first_built(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    calls = []

    def build() -> dict:
        calls.append(1)
        return {"model_dir": tmp_path / "job" / "model", "rc": 0, "log": "head epoch 1/1\n", "at": 1.5}

    first = built_once(Factory(tmp_path / "popen-gw0"), "run", build)
    second = built_once(Factory(tmp_path / "popen-gw1"), "run", build)
    assert calls == [1]
    assert (
        first
        == second
        == {"model_dir": tmp_path / "job" / "model", "rc": 0, "log": "head epoch 1/1\n", "at": 1.5}
    )
    assert isinstance(second["model_dir"], Path)


WORKER = """
import os, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from tests.session_builds import built_once
from tests.test_session_builds import Factory

def build():
    with open({log!r}, "a") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    time.sleep(1.0)  # the other worker asks meanwhile
    return {{"built_by": os.environ["PYTEST_XDIST_WORKER"]}}

print(built_once(Factory(Path({base!r}) / os.environ["PYTEST_XDIST_WORKER"]), "run", build)["built_by"])
"""


def test_two_processes_asking_at_once_build_once(tmp_path: Path) -> None:
    workers = 2
    log = tmp_path / "built.log"
    script = textwrap.dedent(WORKER).format(repo=str(REPO), log=str(log), base=str(tmp_path))
    started = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env={"PYTEST_XDIST_WORKER": f"gw{i}", "PATH": "/usr/bin:/bin"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(workers)
    ]
    outputs = [p.communicate(timeout=60)[0] for p in started]
    assert all(p.returncode == 0 for p in started), outputs
    (builder,) = log.read_text().split()
    assert [out.strip() for out in outputs] == [builder] * workers
