"""Every command the CLIs print for the suite's bad inputs runs as printed: collected from the stack files'
errors (tests/stack/test_fix_commands.py's cases and the errors outside stack values), a live local job's
line in `leftovers`, an interrupted `leftovers`, and `runs` without credentials; each local one (`make`,
`.venv/bin/python -m ...`) run in a fresh shell from a project root (a copy of this one, so what it does stays
there), each `gcloud` and `pulumi` one parse-checked. The trainer's own:
tests/trainer/test_printed_commands.py.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from infra import local_runs, runs
from infra.leftovers import command as leftovers
from infra.leftovers import local_jobs
from infra.vertex.lifecycle.status import JobStatus
from tests.printed_commands import CLOUD, LOCAL, PLACEHOLDER, check_cloud, commands, project_copy, run_local
from tests.stack.conftest import stack_values
from tests.stack.test_fix_commands import CASES, _errors, _extra_errors, _values, own_trainer_dir  # noqa: F401


def _config_fixes(trainer_dir: Path, tmp: Path) -> list[str]:
    found = [str(error) for stack, overrides in CASES for error in _errors(stack, _values(stack, overrides))]
    return found + [str(error) for error in _extra_errors(trainer_dir, tmp)]


def _local_run_line(monkeypatch: pytest.MonkeyPatch, run_dir: Path) -> str:
    """`make train-local`'s line when a second Ctrl-C stops its wait for the cancelled job."""

    def second_ctrl_c(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local_runs, "cancel_all", lambda _run_dir: 1)
    monkeypatch.setattr(local_runs, "wait_stopped", second_ctrl_c)
    return local_runs.interrupted(None, {"base_output_dir": str(run_dir), "display_name": "train-local"})


def _leftovers_lines(
    local_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """A live local job's line (its remove command), and an interrupted listing's last line."""
    status = JobStatus("local/20261129-040000-abcdef", "JOB_STATE_RUNNING", "")
    live = local_jobs.item(local_jobs.LocalJob(local_dir / "runs" / "x", status), "local", str(local_dir))

    def interrupted(*_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(leftovers, "run", interrupted)
    assert leftovers.main(["--stack", "local"]) == 2
    return [f"`{live.remove}`", capsys.readouterr().err]


def _runs_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp: Path) -> str:
    monkeypatch.setattr(
        runs, "load_stack", lambda stack, **_: type("Cfg", (), {"output_root": "gs://b-dev"})()
    )
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    assert runs.main(["--stack", "dev"]) == 1
    return capsys.readouterr().err


def test_every_printed_command_runs_as_printed(
    own_trainer_dir: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    local_dir = tmp_path / "stack-local"
    texts = _config_fixes(own_trainer_dir, tmp_path)
    texts += _leftovers_lines(local_dir, monkeypatch, capsys)
    texts.append(_runs_line(monkeypatch, capsys, tmp_path))
    texts.append(_local_run_line(monkeypatch, local_dir / "runs" / "train-local-x"))
    found = list(dict.fromkeys(command for text in texts for command in commands(text)))
    local = [c for c in found if c.split()[0] in LOCAL]
    cloud = [c for c in found if c.split()[0] in CLOUD]
    assert not [c for c in found if c not in local + cloud], "not in the README's form (.venv/bin/python)"
    # Fails when it finds none: a check of printed commands must have some to check.
    assert len(local) >= 2 and len(cloud) >= 20, (local, cloud)
    assert ".venv/bin/python -m infra.leftovers --stack local --cancel" in local
    assert "make leftovers STACK=local" in local
    for command in cloud:
        check_cloud(command)
    # The local stack's folder in this test's directory: `--cancel` and listings touch nothing else.
    local_stack = stack_values("local", localDir=str(local_dir))
    root = project_copy(tmp_path, {"Pulumi.local.yaml": yaml.safe_dump({"config": local_stack})})
    for command in local:
        if PLACEHOLDER.search(command):  # a user fills it in: the form and the shell are checked
            assert shlex.split(command)[:3] == [".venv/bin/python", "-m", "trainer.predict"], command
            continue
        done = run_local(command, root)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
