"""A tiny local training run through the provider: the trainer's epoch lines reach stderr as it waits."""

import json
import re
from pathlib import Path

import pytest

from infra.vertex.provider import CustomJobProvider
from tests.vertex.props import job_props, pool

pytestmark = pytest.mark.slow


def test_local_run_shows_epoch_lines_before_create_returns_and_reports_metrics(tiny_data, tmp_path, capsys):
    trainer = pool(
        command=["python", "-m", "trainer.task"],
        args=[
            *("--data-dir", tiny_data, "--image-size", "32", "--weights", "none", "--backbone", "resnet50"),
            *("--epochs", "2", "--fine-tune-epochs", "0", "--batch-size", "8"),
        ],
        env={"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"},
        accelerator_type=None,
        accelerator_count=0,
        machine_type="n1-standard-4",
    )
    props = job_props(
        runner="local",
        base_output_dir=str(tmp_path / "run"),
        worker_pools=[trainer],
        poll_interval_seconds=0.5,
    )
    provider = CustomJobProvider()
    outs = provider.create(provider.check({}, props).inputs).outs
    err = capsys.readouterr().err

    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    epoch_lines = [line for line in err.splitlines() if "chief-0| " in line and " head epoch " in line]
    assert [line.split(" head epoch ")[1][:3] for line in epoch_lines] == ["1/2", "2/2"]
    # Each ends with its time and throughput: "(2.8s, 412.5 images/s, input wait 3%)".
    assert all(
        "val_accuracy=" in line and re.search(r"s, [0-9.]+ images/s, input wait \d+%\)$", line)
        for line in epoch_lines
    ), epoch_lines
    assert "absl::InitializeLog" not in err
    # The closing summary comes after the log, and the outputs carry what the job wrote.
    summary = err.strip().splitlines()[-1]
    assert "JOB_STATE_SUCCEEDED after" in summary and "val_accuracy" in summary
    assert err.index(epoch_lines[-1]) < err.index(summary)
    # The trainer found its output directories through AIP_MODEL_DIR and friends.
    model_dir = Path(outs["model_dir"])
    assert model_dir == tmp_path / "run" / "model" and (model_dir / "saved_model.pb").exists()
    assert any((tmp_path / "run" / "logs").iterdir())
    assert outs["start_time"] and outs["end_time"] >= outs["start_time"]
    written = json.loads((model_dir / "metrics.json").read_text())
    assert outs["metrics"] == written and 0.0 <= outs["metrics"]["val_accuracy"] <= 1.0
    assert outs["duration_seconds"] > 0
    assert "estimated_cost_usd" not in outs  # a local run has no Vertex price
