"""`make train-local` runs on the CPU without TensorFlow's C++ start-up lines, failing when it fails; it and
`make tune-local` keep each run in a folder of its own where `make runs` lists it."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
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
    # --no-print-directory: under `make test` the outer make's MAKELEVEL makes this one print "Entering/
    # Leaving directory" lines around its recipe.
    command = ["make", "--no-print-directory", "-n", target, *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout


def _recipe() -> str:
    return _make_n("LOCAL_RUN=/tmp/x")


def test_every_python_command_hides_the_gpu_quiets_tensorflow_and_filters_start_up_lines() -> None:
    lines = _recipe().replace("\\\n", " ").splitlines()
    # setup's check of the .venv's Python version (check-venv) imports only sys; its install (when the .venv
    # is older than pyproject.toml) names the python it installs into.
    commands = [
        c for c in lines if "/python " in c and "sys.version_info" not in c and "pip install" not in c
    ]
    modules = [c.split("python -m ")[1].split()[0] for c in commands if "python -m " in c]
    # The trainer runs as a local training job (infra/local_runs.py), which writes the run's run.json.
    assert modules == ["trainer.create_tfrecords", "infra.local_runs", "trainer.predict"]
    assert len(commands) == 4  # and the held-back images, whose import of trainer loads TensorFlow
    for command in commands:
        assert "CUDA_VISIBLE_DEVICES=-1" in command and "TF_CPP_MIN_LOG_LEVEL=3" in command
        assert "2>&1 | (trap '' INT; exec sed -uE \"/$TF_STARTUP_NOISE/d\")" in command
    assert "TF_CPP_MIN_LOG_LEVEL=0" in _make_n("TF_CPP_MIN_LOG_LEVEL=0")


def test_the_filter_drops_only_the_start_up_lines_and_keeps_the_exit_status() -> None:
    noise = re.search(r"^export TF_STARTUP_NOISE := (.+)$", (ROOT / "Makefile").read_text(), re.M)
    env = {"TF_STARTUP_NOISE": noise.group(1).replace("$$", "$"), "PATH": "/usr/bin:/bin"}
    sed = "(trap '' INT; exec sed -uE \"/$TF_STARTUP_NOISE/d\")"  # as the recipe runs it
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
    assert re.fullmatch(rf"{root}/runs/train-local-\d{{8}}-\d{{6}}-\d+", run_dir), run_dir
    assert re.fullmatch(rf"{root}/tuning/tune-local-\d{{8}}-\d{{6}}-\d+", tune_dir), tune_dir
    assert {"runs", "tuning"} <= set(runs.RUN_FOLDERS)
    assert "infra.runs --stack local" in _make_n(target="runs")
    for recipe in (train, tune):
        assert "benchmarks/" not in recipe


def test_two_makes_started_at_once_get_folders_of_their_own_and_remove_nothing() -> None:
    names = ("LOCAL_RUN", "LOCAL_TUNE", "LOCAL_ROOT")
    env = {k: v for k, v in os.environ.items() if k not in names}
    started = [
        subprocess.Popen(
            ["make", "--no-print-directory", "-n", target],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for target in ("train-local", "train-local", "tune-local", "tune-local")
    ]
    recipes = [process.communicate()[0].replace("\\\n", " ") for process in started]
    folders = [set(re.findall(r"--run-dir (\S+)", recipe)) for recipe in recipes]
    assert all(len(found) == 1 for found in folders) and len(set().union(*folders)) == 4, folders
    assert not any(line.startswith("rm ") for recipe in recipes for line in recipe.splitlines())


def test_a_run_folder_that_exists_is_refused_and_kept(tmp_path: Path) -> None:
    kept = tmp_path / "run"
    kept.mkdir()
    (kept / "run.json").write_text("{}")
    done = subprocess.run(
        ["make", "--no-print-directory", "train-local", f"LOCAL_RUN={kept}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and f"{kept} exists (another run's folder, kept)" in done.stderr
    assert (kept / "run.json").read_text() == "{}"


def test_make_variables_are_honoured_or_refused_with_those_taken() -> None:
    train = _make_n("EPOCHS=1", "FINE_TUNE_EPOCHS=0", "BATCH_SIZE=8", "IMAGE_SIZE=32", "COUNT=40")
    assert "--epochs 1 --fine-tune-epochs 0 --batch-size 8" in train.replace("\\\n", " ")
    assert "--count 40" in train and "--image-size 32" in train
    assert _make_n("STACK=dev", "ARGS=--json", target="plan").splitlines()[-1].endswith("--stack dev --json")
    for target, given, taken in (
        ("tune-local", "STACK=dev", "LOCAL_ROOT LOCAL_TUNE"),
        ("train-local", "EPOCH=1", "EPOCHS FINE_TUNE_EPOCHS BATCH_SIZE IMAGE_SIZE COUNT"),
        ("plan", "STAKC=dev", "STACK ARGS"),
    ):
        done = subprocess.run(
            ["make", "--no-print-directory", "-n", target, given], cwd=ROOT, capture_output=True, text=True
        )
        name = given.split("=")[0]
        assert done.returncode == 2 and done.stdout == "", done
        assert f"*** make {target} does not take {name}; it takes: {taken}" in done.stderr
        assert len(done.stderr.splitlines()) == 1  # make's one line, no "Error" line after it


# A stand-in for .venv/bin/python in the recipe: the steps before training print one line; the training
# step (infra.local_runs) runs until Ctrl-C, then, as the real one does after waiting for the job to stop
# (tests/trainer/test_local_run.py), prints one line a second later and exits 1.
FAKE_PYTHON = """#!/bin/bash
case "$*" in
  *"-m trainer.create_tfrecords"*) echo "wrote data"; exit 0;;
  *"-m infra.local_runs"*) exec "$REAL_PYTHON" -c '
import sys, time
try:  # the Ctrl-C may come while the line is still being written
    print("[train-local] local/x: JOB_STATE_RUNNING", flush=True)
    time.sleep(120)
except KeyboardInterrupt:
    time.sleep(1)
    sys.exit("interrupted: stopped train-local (local/x, CANCELLED); kept the run folder")
';;
  *) exec "$REAL_PYTHON" "$@";;
esac
"""


def test_ctrl_c_in_a_terminal_leaves_the_last_line_through_the_filter(tmp_path: Path) -> None:
    """Ctrl-C at a terminal signals make, the recipe's shell, the command and the filter alike (one
    foreground process group): the filter must outlive it to pass on the command's last line."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").write_text(FAKE_PYTHON)
    (fake / "python").chmod(0o755)
    env = {**os.environ, "REAL_PYTHON": str(ROOT / ".venv" / "bin" / "python")}
    # -o: the .venv's stamp counts as made (a stand-in python cannot make a .venv).
    command = [
        "make",
        "-o",
        ".venv/.installed",
        "train-local",
        f"BIN={fake}",
        f"LOCAL_RUN={tmp_path / 'run'}",
    ]
    pid, terminal = pty.fork()
    if pid == 0:  # the child: a session of its own with the pseudo-terminal as its controlling terminal
        os.chdir(ROOT)
        os.execvpe(command[0], command, env)
    out, deadline = b"", time.monotonic() + 60
    while b"JOB_STATE_RUNNING" not in out:
        assert time.monotonic() < deadline, out
        out += _read(terminal)
    os.write(terminal, b"\x03")  # the terminal's interrupt character: SIGINT to its foreground group
    while chunk := _read(terminal):
        assert time.monotonic() < deadline + 60, out
        out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode()
    assert os.waitstatus_to_exitcode(status) != 0
    assert "interrupted: stopped train-local (local/x, CANCELLED); kept the run folder" in text, text
    assert "Model:" not in text  # the recipe stopped there


def _read(terminal: int) -> bytes:
    """What the terminal shows next (b"" once the session ended)."""
    ready, _, _ = select.select([terminal], [], [], 5.0)
    if not ready:
        return b"..."
    try:
        return os.read(terminal, 4096)
    except OSError:  # EIO: every process of the session has exited
        return b""
