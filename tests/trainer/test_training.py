"""End to end on CPU: a kill and a resume (the shared run, tests/conftest.py `trained`), MirroredStrategy."""

from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

from tests.conftest import FINE_TUNE_EPOCHS, HEAD_EPOCHS
from tests.trainer.helpers import epoch_lines, make_synthetic, run, task_command


def test_killed_run_resumes_from_the_checkpointed_epoch(trained: dict) -> None:
    """The shared run (tests/conftest.py `trained`) is SIGKILLed once head epoch 2 is checkpointed; the same
    command resumes it at epoch 3."""
    r = trained
    assert r["first_rc"] == -signal.SIGKILL, r["first"][-2000:]
    assert not r["exported_before_resume"]  # the kill came mid-training, before any export
    assert r["rc"] == 0, r["second"][-3000:]
    assert f"resumed head from checkpoint at epoch 3/{HEAD_EPOCHS}" in r["second"]
    head = epoch_lines(r["second"], "head")
    assert [line.split(" head epoch ")[1].split()[0] for line in head] == [f"3/{HEAD_EPOCHS}"]
    assert len(epoch_lines(r["second"], "fine_tune")) == FINE_TUNE_EPOCHS


def test_the_killed_and_the_resumed_process_are_one_run(trained: dict) -> None:
    """One checkpoint folder, the one metrics.json names; the run's accuracy, export and per-class report
    are test_classes.py's, the two-class export's test_local_run.py's."""
    assert trained["rc"] == 0, trained["second"][-3000:]
    metrics = json.loads((trained["model_dir"] / "metrics.json").read_text())
    (run_dir,) = (trained["model_dir"].parent / "checkpoints").iterdir()
    assert run_dir.name == metrics["run_id"]
    assert metrics["backbone"] == "densenet121" and metrics["valid_images"] == 39


MIRRORED_SCRIPT = textwrap.dedent(
    """
    import sys
    import trainer  # sets TF_USE_LEGACY_KERAS before TensorFlow loads
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from trainer import distribute, task
    # This machine has no GPUs: stand two logical CPUs in for the two GPUs that select MirroredStrategy.
    assert distribute.strategy_kind(None, gpu_count=2) == "mirrored"
    distribute.strategy_kind = lambda tf_config, gpu_count: "mirrored"
    distribute.make_strategy = lambda kind: tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    task.main(sys.argv[1:])
    """
)


def test_mirrored_strategy_over_two_logical_cpus(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_synthetic(data, count=96)
    model_dir = tmp_path / "model"
    # ResNet50: the test is not about the backbone, and it traces in half DenseNet121's time
    # (tests/vertex/test_local_tuning_trainer.py).
    cmd = task_command(
        data,
        model_dir,
        *("--backbone", "resnet50", "--epochs", "1", "--fine-tune-epochs", "0", "--learning-rate", "0.0005"),
    )
    result = run([cmd[0], "-c", MIRRORED_SCRIPT, *cmd[3:]])
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "strategy mirrored, 2 replica(s), global batch 32, lr 0.001" in log
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["replicas"] == 2 and metrics["global_batch_size"] == 32
    assert (model_dir / "saved_model.pb").exists()
