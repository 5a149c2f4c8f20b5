"""A batch prediction run by the local runner on the session's tiny three-class model, end to end through the
provider: the held-back images classified into JSON lines, a bad file counted as failed, run.json written,
and destroy removing the job's records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.vertex.batch_provider import BatchPredictionProvider
from infra.vertex.runners.local.batch import ERRORS_FILE, PREDICTIONS_FILE
from infra.vertex.runners.local.runner import job_dir
from tests.trainer.helpers import make_class_folder
from trainer import export

CLASS_NAMES = ["blue", "green", "red"]


@pytest.mark.slow
def test_local_batch_prediction_classifies_a_folder(trained: dict, tmp_path: Path, capsys) -> None:
    assert trained["rc"] == 0, trained["log"][-3000:]
    images = make_class_folder(tmp_path / "held-back", CLASS_NAMES, per_class=2, seed=99)
    (images / "red" / "broken.png").write_bytes(b"not an image")
    (images / "notes.txt").write_text("not listed")
    provider = BatchPredictionProvider()
    checked = provider.check(
        {},
        {
            "runner": "local",
            "display_name": "classify-held-back",
            "artifact_uri": str(trained["model_dir"] / export.BYTES_MODEL_DIR),
            "images": str(images),
            "output_dir": str(tmp_path / "predictions"),
            "timeout_seconds": 600,
            "poll_interval_seconds": 0.5,
        },
    )
    assert checked.failures == []
    result = provider.create(checked.inputs)
    outs = result.outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED", outs["error"]
    assert outs["completion_stats"] == {"successful_count": 6, "failed_count": 1, "incomplete_count": 0}
    predictions = Path(outs["predictions_dir"])
    assert predictions.parent == tmp_path / "predictions"
    assert predictions.name.startswith("prediction-classify-held-back-")
    lines = [json.loads(line) for line in (predictions / PREDICTIONS_FILE).read_text().splitlines()]
    assert len(lines) == 6
    for line in lines:
        assert Path(line["image"]).parent.parent == images
        assert sorted(p["class"] for p in line["predictions"]) == CLASS_NAMES  # every class, with its
        assert abs(sum(p["probability"] for p in line["predictions"]) - 1.0) < 1e-4  # probability
    (error,) = [json.loads(line) for line in (predictions / ERRORS_FILE).read_text().splitlines()]
    assert "broken.png" in error["error"]["message"]
    record = json.loads((tmp_path / "predictions" / "run.json").read_text())
    assert record["kind"] == "batch_prediction_job" and record["completion_stats"]["successful_count"] == 6
    assert "6 images classified, 1 failed" in capsys.readouterr().err

    provider.delete(result.id, outs)
    assert not job_dir(str(tmp_path / "predictions"), result.id).exists()
