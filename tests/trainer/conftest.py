"""The runs interrupted by the clock, shared by test_checkpoints.py and test_throughput.py (the session's
trained model is tests/conftest.py's `trained`)."""

from __future__ import annotations

import datetime
import re
import signal
import subprocess
import textwrap
import time

import pytest

from tests.session_builds import built_once
from tests.trainer.helpers import REPO, make_synthetic, run, task_command, trainer_env

# The trainer with its training input slowed: every batch waits SLOW_SECONDS in the pipeline (a py_function
# at the end of data.train_dataset, as a slow disk, network or decode would make it wait).
SLOW_SCRIPT = textwrap.dedent(
    """
    import sys, time
    import trainer  # sets TF_USE_LEGACY_KERAS before TensorFlow loads
    import tensorflow as tf
    from trainer import data, task
    SLOW_SECONDS = float(sys.argv[1])
    fast = data.train_dataset

    def slow(*args, **kwargs):
        def wait(images, labels):
            images = tf.py_function(lambda x: time.sleep(SLOW_SECONDS) or x, [images], images.dtype)
            return tf.ensure_shape(images, [None, None, None, 3]), labels
        return fast(*args, **kwargs).map(wait)

    data.train_dataset = slow
    task.main(sys.argv[2:])
    """
)
SLOW_SECONDS = 1.0
CLOCK_MINUTES = 0.03  # 1.8 s: several backups inside one epoch of a tiny run
BACKUP = re.compile(
    r"^(\S+ \S+) INFO chief-0: backup \((every [^)]*|preemption notice)\) at epoch 1 step (\d+)"
)


def _when(stamp: str) -> float:
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def backup_lines(log: str) -> list[tuple[float, str, int]]:
    """(time, why, step) of each mid-epoch backup line."""
    found = [BACKUP.match(line) for line in log.splitlines()]
    return [(_when(m[1]), m[2], int(m[3])) for m in found if m]


def _start(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        cmd, cwd=REPO, env=trainer_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _until_backups(process: subprocess.Popen, count: int) -> list[str]:
    """The log up to and including the `count`-th clock backup line."""
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line)
        if sum(1 for seen in lines if BACKUP.match(seen)) >= count:
            return lines
    raise AssertionError("the run ended before its backups: " + "".join(lines)[-3000:])


@pytest.fixture(scope="session")
def interrupted_runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One epoch by the clock (test_checkpoints.py): run 1 is SIGKILLed half an interval after its second
    clock backup; run 2 resumes and gets SIGTERM after its first; run 3 resumes with its input slowed on
    purpose (test_throughput.py) and finishes. Built once per session, whichever worker asks first."""
    return built_once(tmp_path_factory, "interrupted_runs", lambda: _interrupt(tmp_path_factory))


def _interrupt(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("clock")
    make_synthetic(root / "data", count=600)  # 480 train images: 30 steps of 16 in the one epoch
    cmd = task_command(
        root / "data",
        root / "job" / "model",
        "--backbone",
        "resnet50",
        "--epochs",
        "1",
        "--fine-tune-epochs",
        "0",
        "--checkpoint-minutes",
        str(CLOCK_MINUTES),
    )
    first = _start(cmd)
    first_log = _until_backups(first, 2)
    time.sleep(CLOCK_MINUTES * 60 / 2)
    killed_at = time.time()
    first.send_signal(signal.SIGKILL)
    first_log += first.stdout.readlines() if first.stdout else []
    first.wait(timeout=60)

    second = _start(cmd)
    second_log = _until_backups(second, 1)
    second.send_signal(signal.SIGTERM)
    second_log += second.stdout.readlines() if second.stdout else []
    second.wait(timeout=120)

    # Backups every few seconds would take most of its time (a backup takes seconds here): the default.
    third = run([cmd[0], "-c", SLOW_SCRIPT, str(SLOW_SECONDS), *cmd[3:], "--checkpoint-minutes", "10"])
    return {
        "first": "".join(first_log),
        "first_rc": first.returncode,
        "killed_at": killed_at,
        "second": "".join(second_log),
        "second_rc": second.returncode,
        "third": third.stdout + third.stderr,
        "third_rc": third.returncode,
        "model_dir": root / "job" / "model",
    }
