"""A batch prediction run by the local runner on the session's tiny three-class model, end to end through the
provider: the held-back images classified into the files and lines Vertex writes (each names its image and
every class with its probability), a corrupt image failing alone and counted as failed, the results table,
run.json written, and destroy removing the job's records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra import predictions as predictions_command
from infra.vertex.batch_provider import BatchPredictionProvider
from infra.vertex.runners.local.batch import ERRORS_FILE, RESULTS_FILE
from infra.vertex.runners.local.runner import job_dir
from serving.payload import UNREADABLE
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
            "artifact_uri": str(trained["model_dir"]),  # the trainer's model dir itself
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
    assert sorted(p.name for p in predictions.iterdir()) == [ERRORS_FILE, RESULTS_FILE]
    lines = [json.loads(line) for line in (predictions / RESULTS_FILE).read_text().splitlines()]
    # Every image has its line (the broken one too: the model answers that it cannot read it).
    assert sorted(line["key"] for line in lines) == sorted(
        str(p) for p in images.rglob("*") if p.suffix in (".png", ".jpg")
    )
    for line in lines:
        assert set(line) == {"key", "prediction"}  # no instance (image bytes) in the output
        prediction = line["prediction"]
        if line["key"].endswith("broken.png"):
            assert prediction["error"] == UNREADABLE and prediction["top_class"] == ""
            continue
        assert prediction["error"] == "" and sorted(prediction["classes"]) == CLASS_NAMES  # every class,
        assert abs(sum(prediction["probabilities"]) - 1.0) < 1e-4  # with its probability
        assert prediction["top_class"] == prediction["classes"][0]
    assert (predictions / ERRORS_FILE).read_text() == ""  # no request failed
    record = json.loads((tmp_path / "predictions" / "run.json").read_text())
    assert record["kind"] == "batch_prediction_job" and record["completion_stats"]["successful_count"] == 6
    assert "6 images classified, 1 failed, 0 incomplete" in capsys.readouterr().err

    # The results as one table, read from the output_dir (its newest prediction-* folder).
    assert predictions_command.main([str(tmp_path / "predictions")]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["IMAGE", "CLASS", "PROBABILITY", "ERROR"] and len(table) == 8
    broken = next(row for row in table if "broken.png" in row)
    assert UNREADABLE in broken
    good = [row.split() for row in table[1:] if "broken.png" not in row]
    assert all(row[1] in CLASS_NAMES and 0 < float(row[2]) <= 1 for row in good)
    assert predictions_command.main([str(predictions), "--csv", "--all-classes"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 6 * 3 + 1

    provider.delete(result.id, outs)
    assert not job_dir(str(tmp_path / "predictions"), result.id).exists()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained two-layer classifier exported by the trainer's own export: what the local runner serves
    is the export, not how well it was trained."""
    import tf_keras as keras

    from trainer.distribute import Role

    inputs = keras.Input((16, 16, 3))
    outputs = keras.layers.Dense(3, activation="softmax")(keras.layers.GlobalAveragePooling2D()(inputs))
    model_dir = tmp_path_factory.mktemp("tiny") / "model"
    export.export(keras.Model(inputs, outputs), str(model_dir), 16, Role("chief", 0, True), CLASS_NAMES)
    return model_dir


@pytest.mark.tensorflow  # the local batch runner loads the exported model with TensorFlow
def test_local_run_names_every_image_and_a_corrupt_one_fails_alone(tiny_model: Path, tmp_path: Path, capsys):
    images = make_class_folder(tmp_path / "images", CLASS_NAMES, per_class=1, size=20, seed=5)
    (images / "green" / "truncated.png").write_bytes(
        (images / "green").iterdir().__next__().read_bytes()[:50]
    )
    provider = BatchPredictionProvider()
    props = {
        "runner": "local",
        "display_name": "tiny",
        "artifact_uri": str(tiny_model),
        "images": str(images),
        "output_dir": str(tmp_path / "out"),
        "timeout_seconds": 600,
        "poll_interval_seconds": 0.2,
    }
    outs = provider.create(provider.check({}, props).inputs).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED", outs["error"]
    assert outs["completion_stats"] == {"successful_count": 3, "failed_count": 1, "incomplete_count": 0}
    instances = [json.loads(line) for line in (tmp_path / "out" / "instances.jsonl").read_text().splitlines()]
    assert len(instances) == 4 and all(set(i) == {"key", "image_bytes"} for i in instances)
    lines = [
        json.loads(line) for line in (Path(outs["predictions_dir"]) / RESULTS_FILE).read_text().splitlines()
    ]
    by_image = {str(Path(line["key"]).relative_to(images)): line["prediction"] for line in lines}
    assert sorted(by_image) == ["blue/000.png", "green/000.png", "green/truncated.png", "red/000.png"]
    assert by_image["green/truncated.png"]["error"] == UNREADABLE
    for name, prediction in by_image.items():
        if name != "green/truncated.png":
            assert prediction["error"] == "" and sorted(prediction["classes"]) == CLASS_NAMES
            assert prediction["top_class"] == prediction["classes"][0]
    err = capsys.readouterr().err
    assert "4 images written to" in err and "3 images classified, 1 failed, 0 incomplete" in err


@pytest.mark.tensorflow  # the local batch runner's server loads the exported model with TensorFlow
def test_a_request_the_server_refuses_fails_its_instances_into_errors_stats(tiny_model: Path, tmp_path: Path):
    """A request the server answers 400 (an instance without image_bytes): each of its instances gets an
    error line with its key and the server's reason."""
    from infra.vertex.runners.local import batch

    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        "".join(json.dumps({"key": f"gs://b/{i}.png", "pixels": [1, 2]}) + "\n" for i in range(3))
    )
    assert batch.main([str(tmp_path / "out"), str(tiny_model), str(instances), "key"]) == 1
    assert (tmp_path / "out" / RESULTS_FILE).read_text() == ""
    errors = [json.loads(line) for line in (tmp_path / "out" / ERRORS_FILE).read_text().splitlines()]
    assert [e["key"] for e in errors] == ["gs://b/0.png", "gs://b/1.png", "gs://b/2.png"]
    assert all(e["error"]["code"] == 3 and "HTTP 400" in e["error"]["message"] for e in errors)
    assert "has no 'image_bytes' field" in errors[0]["error"]["message"]


def test_a_folder_without_a_model_is_refused_before_the_job_starts(tmp_path: Path) -> None:
    """The serving_bytes/ folder an earlier stack passed, or any folder without the trainer's export: the
    error names what is missing, and no job (nor server) is started."""
    from infra.vertex.lifecycle.errors import JobError

    images = make_class_folder(tmp_path / "images", CLASS_NAMES, per_class=1, size=20, seed=5)
    (tmp_path / "model" / "assets").mkdir(parents=True)
    (tmp_path / "model" / "assets" / "class_names.txt").write_text("blue\ngreen\nred\n")
    provider = BatchPredictionProvider()
    props = {
        "runner": "local",
        "display_name": "no-model",
        "artifact_uri": str(tmp_path / "model"),
        "images": str(images),
        "output_dir": str(tmp_path / "out"),
        "timeout_seconds": 600,
    }
    with pytest.raises(JobError, match=r"saved_model.pb is missing\. Pass the directory a training job"):
        provider.create(provider.check({}, props).inputs)
    assert not (tmp_path / "out" / ".vertex-training-local").exists()


def test_a_local_job_recorded_by_the_earlier_version_still_reads(tmp_path: Path):
    """A record whose replica ran the file-list version (3 arguments, its own file names) reads as its
    predictions dir with nothing counted, instead of failing a refresh or destroy of an existing stack."""
    from infra.vertex.lifecycle.status import JobStatus
    from infra.vertex.runners.local.batch_runner import BATCH_MODULE, LocalBatchRunner

    into = tmp_path / "out" / "prediction-old-2026-11-26T10:00:00.000Z"
    record = job_dir(str(tmp_path / "out"), "local/20261126-100000-abcdef")
    record.mkdir(parents=True)
    argv = ["python", "-m", BATCH_MODULE, str(into), "/models/serving_bytes", str(tmp_path / "file-list.txt")]
    (record / "job.json").write_text(json.dumps({"replicas": [{"argv": argv}]}))
    status = LocalBatchRunner(str(tmp_path / "out")).status(
        JobStatus("local/20261126-100000-abcdef", "JOB_STATE_SUCCEEDED", "file://x")
    )
    assert status.predictions_dir == str(into)
    assert status.completion_stats == {"successful_count": 0, "failed_count": 0, "incomplete_count": 0}


def _run_record(run_dir: Path, **fields: object) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"kind": "custom_job", **fields}))


@pytest.mark.slow
def test_predict_local_classifies_a_folder_with_the_newest_local_model(
    trained: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """`make predict-local IMAGES=DIR` without the Pulumi CLI: the newest succeeded run that still holds a
    model is used (a newer failed run and a newer run whose model is gone are passed over), the local batch
    job writes Vertex's files into a folder of its own, and the table ends the output."""
    from infra import local_runs

    root = tmp_path / "stack-local"
    gone = tmp_path / "deleted-model"
    _run_record(
        root / "runs" / "a",
        state="JOB_STATE_SUCCEEDED",
        model_dir=str(trained["model_dir"]),
        create_time="2026-11-29T01:00:00+00:00",
    )
    _run_record(
        root / "runs" / "b",
        state="JOB_STATE_SUCCEEDED",
        model_dir=str(gone),
        create_time="2026-11-29T02:00:00+00:00",
    )
    _run_record(
        root / "runs" / "c",
        state="JOB_STATE_FAILED",
        model_dir=str(trained["model_dir"]),
        create_time="2026-11-29T03:00:00+00:00",
    )
    assert local_runs.newest_model(root) == trained["model_dir"]
    monkeypatch.setattr(local_runs, "local_root", lambda: root)
    images = make_class_folder(tmp_path / "images", CLASS_NAMES, per_class=1, size=24, seed=8)
    assert local_runs.main(["batch", "--images", str(images)]) == 0
    out = capsys.readouterr().out
    assert f"Model:       {trained['model_dir']}" in out
    (folder,) = (root / "predictions").iterdir()
    assert folder.name.startswith("predict-local-")
    assert json.loads((folder / "run.json").read_text())["kind"] == "batch_prediction_job"
    table = out[out.index("IMAGE") : out.index("Run record:")].splitlines()
    assert table[0].split() == ["IMAGE", "CLASS", "PROBABILITY"] and len(table) == 1 + 3
    assert f"Run record:  {folder / 'run.json'}" in out


def test_predict_local_without_a_model_says_how_to_get_one(tmp_path: Path, monkeypatch) -> None:
    from infra import local_runs

    monkeypatch.setattr(local_runs, "local_root", lambda: tmp_path)
    with pytest.raises(SystemExit) as raised:
        local_runs.main(["batch", "--images", str(tmp_path)])
    assert "no trained model under" in str(raised.value) and "make train-local" in str(raised.value)
    with pytest.raises(SystemExit) as named:
        local_runs.main(["batch", "--images", str(tmp_path), "--model-dir", str(tmp_path)])
    assert "saved_model.pb, assets/class_names.txt are missing" in str(named.value)
