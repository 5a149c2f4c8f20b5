"""`make train-local`'s training step (`python -m infra.local_runs train`): the training job resource's local
runner, here on two-class data into the dirs of a three-class run. It starts fresh in a few lines, exports a
two-class model, and leaves a run.json that `make runs` (infra.runs) lists with its metric."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra import runs
from infra.leftovers.command import main as leftovers
from infra.vertex.runners.local.runner import LOCAL_PREFIX, LOCAL_RECORDS, LocalRunner
from tests.leftovers.conftest import write_stack
from tests.stack.conftest import stack_values
from tests.trainer.helpers import REPO, make_synthetic, run, trainer_env


@pytest.fixture(scope="module")
def local_run(trained: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    assert trained["rc"] == 0, trained["log"]
    root = tmp_path_factory.mktemp("stack-local")
    run_dir = root / "runs" / "train-local-test"
    # The shared run's job dir has the layout a job's base_output_dir gets: model/ and checkpoints/.
    shutil.copytree(trained["root"] / "job", run_dir)
    data = root / "two"
    make_synthetic(data, count=48)
    trainer_args = ["--data-dir", str(data), "--weights", "none", "--epochs", "1", "--fine-tune-epochs", "0"]
    done = run(
        [sys.executable, "-m", "infra.local_runs", "train", "--run-dir", str(run_dir), "--", *trainer_args]
    )
    return {
        "root": root,
        "run_dir": run_dir,
        "data": data,
        "rc": done.returncode,
        "log": done.stdout + done.stderr,
    }


def test_a_model_dir_of_another_class_count_starts_fresh_in_a_few_lines(local_run: dict) -> None:
    log = local_run["log"]
    assert local_run["rc"] == 0, log
    assert "class_names ['blue', 'green', 'red'] -> ['cats', 'dogs']" in log
    assert "holds the checkpoints of another run" in log and "Traceback" not in log
    # Not the ~1,480 lines of checkpoint warnings a shared dir gave: the job's own lines and the trainer's.
    assert len(log.splitlines()) <= 40, log
    model = local_run["run_dir"] / "model"
    metrics = json.loads((model / "metrics.json").read_text())
    assert metrics["class_names"] == ["cats", "dogs"] and len(metrics["confusion_matrix"]) == 2
    assert (model / "assets" / "class_names.txt").read_text() == "cats\ndogs\n"


def test_the_two_class_export_serves_one_probability_as_the_trained_model_does(local_run: dict) -> None:
    """The two-class contract (moved here from test_training.py's own run): the SavedModel's serving_default
    takes [None, S, S, 3] and returns P(second class) [None, 1], equal to the trained Keras model's."""
    import numpy as np
    import tensorflow as tf

    from tests.trainer.helpers import SIZE
    from trainer import data, export, model, phases

    assert local_run["rc"] == 0, local_run["log"]
    model_dir = local_run["run_dir"] / "model"
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert set(metrics["per_class_accuracy"]) == {"cats", "dogs"} and metrics["backbone"] == "densenet121"
    assert np.sum(metrics["confusion_matrix"]) == metrics["valid_images"] > 0
    assert np.shape(metrics["confusion_matrix"]) == (2, 2)
    images = next(iter(data.valid_dataset(str(local_run["data"]), SIZE, 64)))[0]
    net = model.build(SIZE, None)
    phases.load_done(net, str(local_run["run_dir"] / "checkpoints" / metrics["run_id"]), "head")
    before = net(images, training=False).numpy()
    serve = tf.saved_model.load(str(model_dir)).signatures["serving_default"]
    after = serve(images=tf.cast(images, tf.float32))[export.SIGNATURE_OUTPUT].numpy()
    assert after.shape == (len(images), 1)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)
    assert serve.structured_input_signature[1]["images"].shape.as_list() == [None, SIZE, SIZE, 3]


def test_the_local_run_leaves_a_record_that_make_runs_lists(
    local_run: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    record = json.loads((local_run["run_dir"] / "run.json").read_text())
    assert (record["kind"], record["state"], record["runner"]) == (
        "custom_job",
        "JOB_STATE_SUCCEEDED",
        "local",
    )
    assert record["command"] == ["python", "-m", "trainer.task"] and "--data-dir" in record["args"]
    assert record["metrics"]["class_names"] == ["cats", "dogs"]
    assert runs.main(["--stack", "local", "--root", str(local_run["root"])]) == 0
    out = capsys.readouterr().out
    assert "1 run(s) under" in out
    (line,) = [row for row in out.splitlines() if "runs/train-local-test" in row]
    assert "SUCCEEDED" in line and f"val_accuracy {record['metrics']['val_accuracy']:.4f}" in line
    assert runs.main(["--stack", "local", "--root", str(local_run["root"]), "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["run_dir"].endswith("runs/train-local-test") and listed["metrics"] == record["metrics"]


def test_ctrl_c_cancels_the_local_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its processes run detached (a Vertex job outlives `pulumi up` too): while it runs, the local stack's
    leftovers list it; an interrupt stops it, records it as CANCELLED, and says so in one line."""
    data = tmp_path / "data"
    make_synthetic(data, count=24)
    local_dir = tmp_path / "stack-local"  # the local stack's localDir, as the Makefile's LOCAL_ROOT
    write_stack(tmp_path, "local", stack_values("local", localDir=str(local_dir)))
    run_dir = local_dir / "runs" / "train-local-x"
    cmd = [sys.executable, "-m", "infra.local_runs", "train", "--run-dir", str(run_dir), "--"]
    # Its output goes to a file, not a pipe: the detached job's processes inherit it and may hold a pipe
    # open long after the runner exits; the test waits on the runner process itself.
    output = tmp_path / "runner.log"
    with open(output, "wb") as out:
        command = subprocess.Popen(
            # A batch the 20 training images fill: the job is still training when the interrupt comes.
            [*cmd, "--data-dir", str(data), "--weights", "none", "--batch-size", "4"],
            cwd=REPO,
            env=trainer_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            # As a terminal's foreground job has it: a runner started in the background (`cmd &` without job
            # control) ignores SIGINT, and Python then installs no KeyboardInterrupt handler in its children.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    deadline = time.monotonic() + 300
    while "JOB_STATE_RUNNING" not in output.read_text(errors="replace"):
        assert command.poll() is None, output.read_text(errors="replace")
        assert time.monotonic() < deadline, output.read_text(errors="replace")
        time.sleep(0.2)
    # `make leftovers STACK=local` while it runs: the live job, free, with the command that stops it.
    assert leftovers(["--stack", "local"], root=tmp_path) == 0
    listed = capsys.readouterr().out
    assert "local job" in listed and "runs/train-local-x" in listed and "RUNNING" in listed, listed
    command.send_signal(signal.SIGINT)
    # Cancelling waits for the trainer, which on SIGTERM makes one last backup first (trainer/checkpoints.py).
    assert command.wait(timeout=300) == 1
    rest = output.read_text(errors="replace")
    (record,) = run_dir.glob(f"{LOCAL_RECORDS}/*/job.json")
    name = LOCAL_PREFIX + record.parent.name
    (last,) = [line for line in rest.splitlines() if line.startswith("interrupted")]
    assert last.startswith(f"interrupted: stopped train-local ({name}, CANCELLED); kept {run_dir} ("), rest
    assert "run.json" in last and last.endswith("`make runs` lists it")  # checkpoints: once an epoch ended
    assert rest.splitlines()[-1] == last and "Traceback" not in rest, rest  # the last line, and only it
    status = LocalRunner(str(run_dir)).get(name)
    assert status is not None and status.state == "JOB_STATE_CANCELLED"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "JOB_STATE_CANCELLED" and record["job_name"] == name
    assert runs.main(["--stack", "local", "--root", str(local_dir)]) == 0
    (row,) = [r for r in capsys.readouterr().out.splitlines() if "runs/train-local-x" in r]
    assert "CANCELLED" in row
    assert leftovers(["--stack", "local"], root=tmp_path) == 0
    assert "nothing found" in capsys.readouterr().out
