"""MultiWorkerMirroredStrategy with two local processes (chief + worker) configured by TF_CONFIG."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.trainer.helpers import REPO, free_ports, make_synthetic, task_command, trainer_env


@pytest.mark.slow
def test_two_workers_train_and_only_the_chief_keeps_outputs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_synthetic(data, count=128)
    ports = free_ports(2)
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]}
    out = tmp_path / "job"
    procs = {}
    tmpdirs = {}
    for task_type in ("chief", "worker"):
        tmpdirs[task_type] = tmp_path / f"tmp-{task_type}"
        tmpdirs[task_type].mkdir()
        tf_config = json.dumps({"cluster": cluster, "task": {"type": task_type, "index": 0}})
        env = trainer_env(
            TF_CONFIG=tf_config,
            TMPDIR=str(tmpdirs[task_type]),
            AIP_MODEL_DIR=str(out / "model"),
            AIP_CHECKPOINT_DIR=str(out / "checkpoints"),
            AIP_TENSORBOARD_LOG_DIR=str(out / "logs"),
        )
        # ResNet50: not about the backbone; it traces in half DenseNet121's time
        # (tests/vertex/test_local_tuning_trainer.py).
        cmd = task_command(
            data, out / "model", "--backbone", "resnet50", "--epochs", "1", "--fine-tune-epochs", "0"
        )
        procs[task_type] = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    logs = {}
    for task_type, proc in procs.items():
        logs[task_type], _ = proc.communicate(timeout=400)
    for task_type, proc in procs.items():
        assert proc.returncode == 0, f"{task_type} failed:\n{logs[task_type][-3000:]}"

    assert "strategy multi_worker, 2 replica(s), global batch 32" in logs["chief"]
    assert "worker-0: head epoch 1/1" in logs["worker"]
    assert (out / "model" / "saved_model.pb").exists()
    metrics = json.loads((out / "model" / "metrics.json").read_text())
    assert metrics["strategy"] == "multi_worker" and metrics["replicas"] == 2
    assert 0.0 <= metrics["val_accuracy"] <= 1.0
    # The worker wrote its model, phase weights and logs to its own temp dir and deleted them.
    assert list(tmpdirs["worker"].iterdir()) == []
    assert "exported" not in logs["worker"]
