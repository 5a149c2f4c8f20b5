"""End to end on CPU: generated images -> TFRecords -> DenseNet121 -> SavedModel, with a kill and a resume."""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.trainer.helpers import REPO, SIZE, epoch_lines, make_synthetic, run, task_command, trainer_env

HEAD_EPOCHS, FINE_TUNE_EPOCHS = 3, 1


@pytest.fixture(scope="module")
def interrupted_then_resumed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Trains, SIGKILLs the trainer once head epoch 2 is checkpointed, then runs the same command again."""
    root = tmp_path_factory.mktemp("e2e")
    data = root / "data"
    make_synthetic(data, count=192)
    model_dir = root / "job" / "model"
    cmd = task_command(
        data,
        model_dir,
        "--epochs",
        str(HEAD_EPOCHS),
        "--fine-tune-epochs",
        str(FINE_TUNE_EPOCHS),
        "--image-size",
        str(SIZE),
    )
    first = subprocess.Popen(
        cmd, cwd=REPO, env=trainer_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    first_log = []
    assert first.stdout is not None
    for line in first.stdout:
        first_log.append(line)
        if f" head epoch 2/{HEAD_EPOCHS} " in line:  # logged after BackupAndRestore saved the epoch
            first.send_signal(signal.SIGKILL)
            break
    first.wait(timeout=60)
    exported_before_resume = (model_dir / "saved_model.pb").exists()
    second = run(cmd)
    return {
        "root": root,
        "data": data,
        "model_dir": model_dir,
        "first": "".join(first_log),
        "first_rc": first.returncode,
        "exported_before_resume": exported_before_resume,
        "second": second.stdout + second.stderr,
        "second_rc": second.returncode,
    }


@pytest.mark.slow
def test_killed_run_resumes_from_the_checkpointed_epoch(interrupted_then_resumed: dict) -> None:
    r = interrupted_then_resumed
    assert r["first_rc"] == -signal.SIGKILL, r["first"][-2000:]
    assert not r["exported_before_resume"]  # the kill came mid-training, before any export
    assert r["second_rc"] == 0, r["second"][-3000:]
    assert f"resumed head from checkpoint at epoch 3/{HEAD_EPOCHS}" in r["second"]
    head = epoch_lines(r["second"], "head")
    assert [line.split(" head epoch ")[1].split()[0] for line in head] == [f"3/{HEAD_EPOCHS}"]
    assert len(epoch_lines(r["second"], "fine_tune")) == FINE_TUNE_EPOCHS


@pytest.mark.slow
def test_end_to_end_accuracy_and_exported_model_matches(interrupted_then_resumed: dict) -> None:
    import tensorflow as tf

    from trainer import data, export, model, phases

    r = interrupted_then_resumed
    assert r["second_rc"] == 0, r["second"][-3000:]
    metrics = json.loads((r["model_dir"] / "metrics.json").read_text())
    print(f"end-to-end val_accuracy={metrics['val_accuracy']:.4f} val_loss={metrics['val_loss']:.4f}")
    assert metrics["val_accuracy"] >= 0.9
    assert metrics["valid_images"] == 38  # every validation image, center-cropped
    assert set(metrics["per_class_accuracy"]) == {"cats", "dogs"} and metrics["backbone"] == "densenet121"
    assert np.sum(metrics["confusion_matrix"]) == 38 and np.shape(metrics["confusion_matrix"]) == (2, 2)

    # The SavedModel predicts what the trained Keras model (its final weights, rebuilt here) predicts.
    images = next(iter(data.valid_dataset(str(r["data"]), SIZE, 64)))[0]
    net = model.build(SIZE, None)
    # The killed process and the resumed one are one run: one checkpoint folder, the one metrics.json names.
    (run_dir,) = (r["model_dir"].parent / "checkpoints").iterdir()
    assert run_dir.name == metrics["run_id"]
    phases.load_done(net, str(run_dir), "fine_tune")
    before = net(images, training=False).numpy()
    serve = tf.saved_model.load(str(r["model_dir"])).signatures["serving_default"]
    after = serve(images=tf.cast(images, tf.float32))[export.SIGNATURE_OUTPUT].numpy()
    assert after.shape == (len(images), 1)  # the contract: P(second class), [None, 1]
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)
    assert serve.structured_input_signature[1]["images"].shape.as_list() == [None, SIZE, SIZE, 3]


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


@pytest.mark.slow
def test_mirrored_strategy_over_two_logical_cpus(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_synthetic(data, count=96)
    model_dir = tmp_path / "model"
    cmd = task_command(
        data, model_dir, "--epochs", "1", "--fine-tune-epochs", "0", "--learning-rate", "0.0005"
    )
    result = run([cmd[0], "-c", MIRRORED_SCRIPT, *cmd[3:]])
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "strategy mirrored, 2 replica(s), global batch 32, lr 0.001" in log
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["replicas"] == 2 and metrics["global_batch_size"] == 32
    assert (model_dir / "saved_model.pb").exists()
