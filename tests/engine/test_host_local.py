"""The real dynamic-provider host runs local jobs; replicas never import from the host's working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.engine.host import ROOT, engine_launch, plain
from tests.engine.inputs import JobShape, recorded

# Failure 3: with `main: infra/`, infra/tensorboard.py (now in components/) shadowed the tensorboard package
# in every replica.
SHADOW = "raise ImportError('shadowed: imported tensorboard.py from the provider working directory')\n"


def project_dir_with_shadow(tmp_path: Path) -> Path:
    """A program directory like this project's, plus a module named like an installed package."""
    program = tmp_path / "program"
    program.mkdir()
    (program / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (program / ".venv").symlink_to(ROOT / ".venv")
    (program / "tensorboard.py").write_text(SHADOW)
    return program


def local_shape(base: Path, command: tuple[str, ...], args: tuple[str, ...] = (), **env: str) -> JobShape:
    return JobShape(
        unknown=frozenset(),
        runner="local",
        base_output_dir=str(base),
        command=command,
        args=args,
        env={"TF_CPP_MIN_LOG_LEVEL": "2", **env},
        secret_env=False,
        accelerator=False,
        poll_interval_seconds=0.2,
    )


def run_through_host(start_host, program: Path, shape: JobShape) -> dict:
    project = yaml.safe_load((program / "Pulumi.yaml").read_text())
    host = start_host(engine_launch(project, program))
    checked = host.check(recorded(shape, preview=False))
    assert list(checked.failures) == []
    created = host.create(checked.inputs, timeout=600)
    outs = plain(created.properties)
    host.delete(created.id, created.properties)
    return outs


def test_replicas_do_not_import_from_the_provider_working_directory(start_host, tmp_path):
    program = project_dir_with_shadow(tmp_path)
    probe = "import tensorboard, sys; print(tensorboard.__file__)"
    outs = run_through_host(start_host, program, local_shape(tmp_path / "run", ("python", "-c", probe)))
    assert outs["state"] == "JOB_STATE_SUCCEEDED", outs["error"]


@pytest.mark.slow
def test_local_runner_trains_the_real_trainer_through_the_host(start_host, tmp_path):
    data = tmp_path / "data"
    prepare = ["--source", "synthetic", "--count", "32", "--output", str(data), "--image-size", "32"]
    subprocess.run(
        [sys.executable, "-m", "trainer.create_tfrecords", *prepare],
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        timeout=300,
        capture_output=True,
    )
    args = ("--data-dir", str(data), "--epochs", "1", "--fine-tune-epochs", "0", "--batch-size", "8")
    shape = local_shape(
        tmp_path / "run",
        ("python", "-m", "trainer.task"),
        (*args, "--image-size", "32", "--weights", "none", "--backbone", "resnet50"),
        TF_USE_LEGACY_KERAS="1",
    )
    # From a program directory whose tensorboard.py would break the trainer's TensorBoard callback.
    outs = run_through_host(start_host, project_dir_with_shadow(tmp_path), shape)
    assert outs["state"] == "JOB_STATE_SUCCEEDED", outs["error"]
    model_dir = Path(outs["model_dir"])
    assert (model_dir / "saved_model.pb").exists()
    assert {"val_accuracy", "val_loss"} <= json.loads((model_dir / "metrics.json").read_text()).keys()
    assert any((tmp_path / "run" / "logs").iterdir())
