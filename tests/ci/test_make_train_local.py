"""`make train-local` runs on the CPU without TensorFlow's C++ start-up lines, failing when it fails; it and
`make tune-local` keep each run in a folder of its own where `make runs` lists it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from infra import runs
from infra.config.stack_file import load_stack
from tests.stack.conftest import ROOT

NOISE = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795358282.950514    7745 cudart_stub.cc:31] Could not find cuda drivers on your machine, "
    "GPU will not be used.",
]
KEPT = ["2026-11-22 14:45:08,650 INFO chief-0: densenet121, 2 classes", "Traceback (most recent call last):"]


def _make_n(*args: str, target: str = "train-local") -> str:
    """`make -n` with the defaults: none of its variables set where it runs (a variable set there wins)."""
    names = ("TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES", "LOCAL_RUN", "LOCAL_TUNE", "LOCAL_ROOT", "STACK")
    env = {k: v for k, v in os.environ.items() if k not in names}
    command = ["make", "-n", target, *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout


def _recipe() -> str:
    return _make_n("LOCAL_RUN=/tmp/x")


def test_every_python_command_hides_the_gpu_quiets_tensorflow_and_filters_start_up_lines() -> None:
    lines = _recipe().replace("\\\n", " ").splitlines()
    # setup's check of the .venv's Python version (check-venv) imports only sys.
    commands = [c for c in lines if "/python " in c and "sys.version_info" not in c]
    modules = [c.split("python -m ")[1].split()[0] for c in commands if "python -m " in c]
    # The trainer runs as a local training job (infra/local_runs.py), which writes the run's run.json.
    assert modules == ["trainer.create_tfrecords", "infra.local_runs", "trainer.predict"]
    assert len(commands) == 4  # and the held-back images, whose import of trainer loads TensorFlow
    for command in commands:
        assert "CUDA_VISIBLE_DEVICES=-1" in command and "TF_CPP_MIN_LOG_LEVEL=3" in command
        assert '2>&1 | sed -uE "/$TF_STARTUP_NOISE/d"' in command
    assert "TF_CPP_MIN_LOG_LEVEL=0" in _make_n("TF_CPP_MIN_LOG_LEVEL=0")


def test_the_filter_drops_only_the_start_up_lines_and_keeps_the_exit_status() -> None:
    noise = re.search(r"^export TF_STARTUP_NOISE := (.+)$", (ROOT / "Makefile").read_text(), re.M)
    env = {"TF_STARTUP_NOISE": noise.group(1).replace("$$", "$"), "PATH": "/usr/bin:/bin"}
    sed = 'sed -uE "/$TF_STARTUP_NOISE/d"'  # as the recipe runs it
    text = "\n".join([*NOISE, *KEPT]) + "\n"
    shell = ["bash", "-o", "pipefail", "-c"]
    filtered = subprocess.run(
        [*shell, f'printf %s "$TEXT" | {sed}'], env={**env, "TEXT": text}, capture_output=True, text=True
    )
    assert filtered.stdout.splitlines() == KEPT
    failing = subprocess.run([*shell, f"(echo x; exit 3) | {sed}"], env=env, capture_output=True)
    assert failing.returncode == 3


@pytest.mark.tensorflow  # the step imports the trainer's package, which loads TensorFlow
def test_the_held_back_images_step_runs_as_the_recipe_writes_it(tmp_path) -> None:
    """The recipe's inline program (no test imports it): run as make runs it, after its `mkdir -p`."""
    recipe = _make_n(f"LOCAL_RUN={tmp_path}").replace("\\\n", " ")
    (step,) = [c for c in recipe.splitlines() if "/held-back" in c and "python -c" in c]
    script = step.split("python -c ", 1)[1].split(" 2>&1 |", 1)[0]
    (tmp_path / "held-back").mkdir()
    done = subprocess.run(
        f".venv/bin/python -c {script}", shell=True, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "held-back").iterdir())
    assert names == ["cats-0.png", "cats-2.png", "dogs-1.png", "dogs-3.png"]


def test_local_runs_go_where_make_runs_reads_and_never_run_a_benchmark() -> None:
    root = Path(load_stack("local").output_root).relative_to(ROOT)  # Pulumi.local.yaml's localDir
    train = _make_n().replace("\\\n", " ")
    tune = _make_n(target="tune-local").replace("\\\n", " ")
    (run_dir,) = set(re.findall(r"--run-dir (\S+)", train))
    (tune_dir,) = set(re.findall(r"--run-dir (\S+)", tune))
    # infra.runs lists <root>/runs/* and <root>/tuning/*: every run, under a new name each time.
    assert re.fullmatch(rf"{root}/runs/train-local-\d{{8}}-\d{{6}}", run_dir), run_dir
    assert re.fullmatch(rf"{root}/tuning/tune-local-\d{{8}}-\d{{6}}", tune_dir), tune_dir
    assert {"runs", "tuning"} <= set(runs.RUN_FOLDERS)
    assert "infra.runs --stack local" in _make_n(target="runs")
    for recipe in (train, tune):
        assert "benchmarks/" not in recipe
