"""A script trainer runs as its author wrote it: `python train.py` from its directory, on both sides.

Locally: the stack's config -> build() under Pulumi's mock runtime -> the registered CustomJob inputs -> the
real provider and LocalRunner -> the script's process. In the image: the generated Dockerfile (hadolint-clean)
puts the directory at its WORKDIR; the same command runs from that directory of a copy laid out as the image.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from infra.components.dockerfile import dockerfile_text
from infra.components.trainer_workdir import layout, local_workdir
from infra.stack import build
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from infra.vertex.provider import CustomJobProvider
from infra.vertex.runners.local.runner import WORKDIR_ENV
from tests.fakes.pulumi_mocks import run_program
from tests.stack.conftest import ROOT, stack_config
from tests.stack.test_trainer_image import HADOLINT

# A script as people write them: a sibling import, a file read by a relative path, flags, AIP_MODEL_DIR.
TRAIN_PY = """\
import argparse, json, os, pathlib, sys
import helper

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, required=True)
args = parser.parse_args()
settings = json.loads(pathlib.Path("settings.json").read_text())
model_dir = pathlib.Path(os.environ["AIP_MODEL_DIR"])
model_dir.mkdir(parents=True, exist_ok=True)
metrics = {"val_loss": helper.loss(args.epochs), "epochs": args.epochs}
(model_dir / "metrics.json").write_text(json.dumps(metrics))
(model_dir / "ran_in.txt").write_text(os.getcwd())
print(f"trained {settings['name']} for {args.epochs} epochs", flush=True)
"""
HELPER_PY = "def loss(epochs):\n    return 1.0 / (1 + epochs)\n"
COMMANDS = {"script": ["python", "train.py"], "module in the directory": ["python", "-m", "train"]}


@pytest.fixture(scope="module")
def script_dir() -> Iterator[Path]:
    """A trainer directory in the project (as trainerDir must be): a requirements.txt and no Dockerfile."""
    directory = ROOT / ".local" / f"script-trainer-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    (directory / "train.py").write_text(TRAIN_PY)
    (directory / "helper.py").write_text(HELPER_PY)
    (directory / "settings.json").write_text(json.dumps({"name": "tiny"}))
    (directory / "requirements.txt").write_text("")
    yield directory
    shutil.rmtree(directory)


def registered_train_job(script_dir: Path, local_dir: Path, command: list[str]) -> dict[str, Any]:
    cfg = stack_config(
        "housing",
        trainerDir=str(script_dir.relative_to(ROOT)),
        trainerCommand=command,
        trainerArgs=["--epochs", "{epochs}"],
        localDir=str(local_dir),
        epochs=3,
    )
    run = run_program(lambda: build(cfg), stack="housing")
    (job,) = [job.inputs for job in run.by_type(RESOURCE_TYPE) if job.name == "train"]
    return {key: value for key, value in job.items() if key != "__provider"}


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_the_local_stack_runs_it_from_its_directory(script_dir: Path, tmp_path: Path, command) -> None:
    inputs = {**registered_train_job(script_dir, tmp_path, command), "poll_interval_seconds": 0.2}
    (pool,) = inputs["worker_pools"]
    # Relative to the project root: the same job from another clone of the project.
    assert pool["command"] == command and pool["env"][WORKDIR_ENV] == script_dir.relative_to(ROOT).as_posix()
    provider = CustomJobProvider()
    outs = provider.create(provider.check({}, inputs).inputs).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED", outs["error"]
    model_dir = Path(outs["model_dir"])
    assert (model_dir / "ran_in.txt").read_text() == str(script_dir)
    assert outs["metrics"] == {"val_loss": 0.25, "epochs": 3}


def test_the_generated_image_runs_the_same_command_from_the_same_directory(
    script_dir: Path, tmp_path: Path
) -> None:
    dockerfile = dockerfile_text(script_dir)
    (tmp_path / "Dockerfile").write_text(dockerfile)
    lint = subprocess.run([str(HADOLINT), str(tmp_path / "Dockerfile")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    image = layout(dockerfile)
    assert image.workdir == image.context_dir == PurePosixPath("/app") / script_dir.name
    assert local_workdir(script_dir, dockerfile, ROOT) == script_dir  # where the local job ran (above)
    # The image's file system, rooted at tmp_path: the context copied to its destination, the command run from
    # WORKDIR with the Dockerfile's PYTHONPATH.
    image_root = tmp_path / "image"
    shutil.copytree(script_dir, image_root / image.context_dir.relative_to("/"))
    workdir = image_root / image.workdir.relative_to("/")
    env = {
        **os.environ,
        "PYTHONPATH": str(image_root / "app"),
        "AIP_MODEL_DIR": str(tmp_path / "model"),
    }
    env.pop("PYTHONSAFEPATH", None)
    assert "PYTHONPATH=/app" in dockerfile
    for command in COMMANDS.values():
        argv = [sys.executable, *command[1:], "--epochs", "3"]
        done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "trained tiny for 3 epochs\n"
        assert (tmp_path / "model" / "ran_in.txt").read_text() == str(workdir)


def test_a_package_module_still_runs_from_the_directory_on_both_sides() -> None:
    """`python -m housing.task` from examples/housing/: PYTHONPATH is the parent here, /app in the image."""
    housing = ROOT / "examples" / "housing"
    dockerfile = dockerfile_text(housing)
    assert local_workdir(housing, dockerfile, ROOT) == housing
    done = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('housing.task').origin)"],
        cwd=housing,
        env={**os.environ, "PYTHONPATH": str(housing.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(housing / "task.py")
