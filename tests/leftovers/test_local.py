"""`python -m infra.leftovers --stack local`: the live local jobs a killed `pulumi up` can leave, listed from
the LocalRunner's records under the stack's localDir, and stopped with --cancel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra.config import REPO_ROOT
from infra.leftovers.command import main
from infra.vertex.provider import CustomJobProvider
from infra.vertex.runners.local.runner import LocalRunner
from tests.leftovers.conftest import write_stack
from tests.stack.conftest import stack_values
from tests.vertex.props import job_props, pool

SLEEP = "import time; time.sleep(120)"


@pytest.fixture
def local_dir(tmp_path: Path) -> Path:
    """The committed local stack's file, its localDir in this test's directory."""
    write_stack(tmp_path, "local", stack_values("local", localDir=str(tmp_path / "stack-local")))
    return tmp_path / "stack-local"


def start(base: Path, stack: str = "local") -> str:
    """A local job as the provider starts it (wait=False: as a `pulumi up` killed while it ran leaves it)."""
    labels = {"managed-by": "pulumi", "pulumi_project": "vertex-training", "pulumi_stack": stack}
    props = job_props(
        runner="local",
        base_output_dir=str(base),
        labels=labels,
        wait=False,
        worker_pools=[
            pool(
                machine_type="n1-standard-4",
                accelerator_type=None,
                accelerator_count=0,
                image_uri="trainer:local",
                command=["python", "-c", SLEEP],
                args=[],
                env={},
            )
        ],
    )
    provider = CustomJobProvider()
    checked = provider.check({}, props)
    assert not checked.failures, checked.failures
    return provider.create(checked.inputs).id


def running(base: Path, name: str) -> None:
    deadline = time.monotonic() + 30
    while LocalRunner(str(base)).get(name).state != "JOB_STATE_RUNNING":
        assert time.monotonic() < deadline, "the local job did not start"
        time.sleep(0.1)


def test_no_live_local_job(local_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--stack", "local"], root=local_dir.parent) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Leftovers of stack local (live local jobs under {local_dir}):",
        "nothing found",
        "Stack local: nothing bills.",
    ]


def test_a_live_local_job_is_listed_as_free_and_cancel_stops_it(
    local_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = local_dir / "runs" / "train"
    name = start(base)
    other = start(local_dir / "runs" / "someone-elses", stack="local2")  # another stack's, same folder
    try:
        running(base, name)
        assert main(["--stack", "local", "--json"], root=local_dir.parent) == 0  # free: nothing bills
        report = json.loads(capsys.readouterr().out)
        (item,) = report["items"]
        assert (item["kind"], item["region"], item["bills"], item["state"]) == (
            "local job",
            "local",
            False,
            "RUNNING",
        )
        assert item["name"] == f"{name} (runs/train)"
        assert item["cost"].startswith("free (this machine's CPU; supervisor pid ")
        pid = int(item["cost"].rsplit(" ", 1)[1].rstrip(")"))
        os.kill(pid, 0)  # the supervisor named is alive

        assert main(["--stack", "local"], root=local_dir.parent) == 0
        assert capsys.readouterr().out.splitlines()[-1] == (
            "Stack local: nothing bills, 1 live local job(s) (free; --cancel stops them)."
        )
        assert main(["--stack", "local", "--cancel"], root=local_dir.parent) == 0
        out = capsys.readouterr().out
        assert f"cancelled: local job {name}" in out
        assert LocalRunner(str(base)).get(name).state == "JOB_STATE_CANCELLED"
        assert out.rstrip().splitlines()[-2:] == ["nothing found", "Stack local: nothing bills."]
        assert LocalRunner(str(local_dir / "runs" / "someone-elses")).get(other).state == "JOB_STATE_RUNNING"
    finally:
        for where, job in ((base, name), (local_dir / "runs" / "someone-elses", other)):
            LocalRunner(str(where)).cancel(job)


def test_the_command_runs_as_users_run_it_from_the_project_root() -> None:
    """`python -m infra.leftovers --stack local` in a fresh process, from the project root: the committed
    local stack, its exit code and report (a live local job there would be listed as free: still exit 0)."""
    result = subprocess.run(
        [sys.executable, "-m", "infra.leftovers", "--stack", "local"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Leftovers of stack local (live local jobs under ")
    assert result.stdout.rstrip().splitlines()[-1].startswith("Stack local: nothing bills")
    assert "Traceback" not in result.stderr


def test_a_record_cut_short_is_named_and_exits_2(local_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A `pulumi up` killed while writing a job's record leaves half a job.json: named, never a traceback."""
    record = local_dir / "runs" / "a" / ".vertex-training-local" / "20261126-000000-abcdef"
    record.mkdir(parents=True)
    (record / "job.json").write_text('{"name": "local/2026')
    assert main(["--stack", "local"], root=local_dir.parent) == 2
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(
        f"Stack local: nothing of what was read bills, could not read 1: local job record {record} ("
    )
