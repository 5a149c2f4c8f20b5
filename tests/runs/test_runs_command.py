"""`python -m infra.runs` over records it did not make itself: a bucket (fake Cloud Storage through the real
client), studies, runs without a record, the built-in trainer's phased history, and the stack's own root."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from infra import runs
from infra.config import ConfigError
from infra.config.stack_file import load_stack
from tests.fakes.storage import FakeStorage
from tests.stack.conftest import ROOT, stack_config

BUCKET = "gs://team-bucket/vision"
L4_SPOT = {
    "machine_type": "g2-standard-4",
    "accelerator_type": "NVIDIA_L4",
    "accelerator_count": 1,
    "scheduling_strategy": "SPOT",
}
# The built-in trainer's metrics.json history: one entry per phase, in order.
PHASED = {"head": {"val_accuracy": [0.6, 0.7], "loss": [1.0, 0.5]}, "fine_tune": {"val_accuracy": [0.81]}}


def _record(**fields: object) -> bytes:
    base = {
        "record_version": 1,
        "kind": "custom_job",
        "stack": "dev",
        "runner": "vertex",
        "region": "us-central1",
        "state": "JOB_STATE_SUCCEEDED",
        "placement": L4_SPOT,
        "duration_seconds": 754.0,
    }
    return json.dumps({**base, **fields}).encode()


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeStorage]:
    storage = FakeStorage()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", storage.start())
    storage.put(
        f"{BUCKET}/runs/aaa111/run.json",
        _record(
            create_time="2026-11-24T10:00:00+00:00",
            args=[
                "--epochs",
                "3",
                "--learning-rate",
                "0.001",
                "--data-dir",
                "gs://team-bucket/vision/data/x",
            ],
            metrics={"val_accuracy": 0.81, "val_loss": 0.4, "history": PHASED},
            estimated_cost_usd=0.21,
        ),
    )
    storage.put(
        f"{BUCKET}/runs/bbb222/run.json",
        _record(
            create_time="2026-11-25T09:30:00+00:00",
            args=["--epochs", "3", "--learning-rate", "0.01", "--data-dir", "gs://team-bucket/vision/data/y"],
            metrics={"val_accuracy": 0.86},
            estimated_cost_usd=0.19,
        ),
    )
    storage.put(f"{BUCKET}/runs/ccc333/model/saved_model.pb", b"...")  # a run still going: no record yet
    storage.put(
        f"{BUCKET}/tuning/ddd444/run.json",
        _record(
            kind="tuning_job",
            create_time="2026-11-25T08:00:00+00:00",
            args=["--epochs", "3"],
            metric_id="val_accuracy",
            trials=[{"id": "1"}, {"id": "2"}, {"id": "3"}],
            best_trial="2",
            best_parameters={"learning-rate": 0.01},
            best_metric=0.88,
        ),
    )
    yield storage
    storage.stop()


def test_a_bucket_lists_runs_and_studies_newest_first(
    bucket: FakeStorage, capsys: pytest.CaptureFixture
) -> None:
    assert runs.main(["--stack", "dev", "--root", BUCKET, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["run_dir"] for r in listed] == [
        f"{BUCKET}/runs/bbb222",
        f"{BUCKET}/tuning/ddd444",
        f"{BUCKET}/runs/aaa111",
        f"{BUCKET}/runs/ccc333",
    ]
    assert listed[-1] == {
        "run_dir": f"{BUCKET}/runs/ccc333",
        "problem": runs.read_run(f"{BUCKET}/runs/ccc333").problem,
    }
    assert "no run.json" in listed[-1]["problem"]


def test_the_table_compares_what_differs_with_cost_shape_and_the_studys_best(
    bucket: FakeStorage, capsys: pytest.CaptureFixture
) -> None:
    assert runs.main(["--stack", "dev", "--root", BUCKET]) == 0
    title, header, newest, study, oldest, missing = capsys.readouterr().out.splitlines()
    assert title == f"Stack dev: 4 run(s) under {BUCKET}, newest first"
    # Only the learning rate differs: epochs are the same and the data dirs are places, not settings.
    assert header.split() == [
        *("WHEN", "(UTC)", "STATE", "learning-rate", "METRIC", "DURATION", "COST", "SHAPE", "REGION", "RUN")
    ]
    assert newest.split() == [
        *("2026-11-25", "09:30", "SUCCEEDED", "0.01", "val_accuracy", "0.8600", "12m", "34s", "USD", "0.19"),
        *("g2-standard-4", "+", "1", "x", "NVIDIA_L4", "spot", "us-central1", "runs/bbb222"),
    ]
    assert (
        "val_accuracy 0.8800 (best of 3 trials: #2 learning-rate=0.01)" in study and "tuning/ddd444" in study
    )
    assert oldest.split()[3] == "0.001" and "USD 0.21" in oldest
    assert missing.split()[:3] == ["?", "NO", "RECORD"] and "runs/ccc333" in missing


def test_history_joins_the_trainers_phases_in_order() -> None:
    record = json.loads(_record(metrics={"history": PHASED}))
    assert runs.history(record) == ("val_accuracy", [0.6, 0.7, 0.81])
    assert runs.history({"metrics": {"history": {"val_loss": [3.0, 2.0]}}}) == ("val_loss", [3.0, 2.0])
    assert runs.history({"metrics": {"val_loss": 1.0}}) is None


def test_the_default_root_is_the_stacks_local_dir_or_bucket() -> None:
    assert load_stack("housing").output_root == str(ROOT / ".local" / "stack-housing")
    assert stack_config("dev").output_root == "gs://acme-vt-dev-dev-training"  # the stack's bucket


def test_an_unknown_stack_and_an_unreadable_bucket_are_clear_errors(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert runs.main(["--stack", "nosuch"]) == 2
    assert "no stack file Pulumi.nosuch.yaml" in capsys.readouterr().err
    # The committed dev file holds example ids (refused): read it with this test's own.
    monkeypatch.setattr(runs, "load_stack", stack_config)
    # No credentials in tests (tests/conftest.py): the bucket cannot be listed.
    assert runs.main(["--stack", "dev"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot list the runs under gs://acme-vt-dev-dev-training: ")
    assert "gcloud auth application-default login" in err


def test_a_stack_file_that_is_not_yaml_is_a_config_error(tmp_path) -> None:
    (tmp_path / "Pulumi.broken.yaml").write_text("config: [unclosed\n")
    with pytest.raises(ConfigError, match=r"Pulumi\.broken\.yaml is not valid YAML"):
        load_stack("broken", tmp_path)


def test_a_cost_counted_at_the_on_demand_bound_reads_as_a_bound() -> None:
    record = {"state": "JOB_STATE_SUCCEEDED", "estimated_cost_usd": 0.62, "args": []}
    bounded = runs.row(runs.Run("gs://b/runs/a", {**record, "estimated_cost_bound": True}), [])
    plain = runs.row(runs.Run("gs://b/runs/a", record), [])
    assert "<= USD 0.62" in bounded and "USD 0.62" in plain and "<= USD 0.62" not in plain


@pytest.mark.parametrize(
    "field", [{"placement": "n1"}, {"duration_seconds": "12s"}, {"metrics": [1]}, {"args": "--lr 1"}]
)
def test_a_record_with_fields_of_the_wrong_type_is_listed_as_unreadable(tmp_path, field) -> None:
    run_dir = tmp_path / "runs" / "abc"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"state": "JOB_STATE_SUCCEEDED", **field}))
    (run,) = runs.list_runs(str(tmp_path))
    assert (
        run.record is None
        and run.problem.startswith("run.json unreadable")
        and next(iter(field)) in run.problem
    )
    assert runs.row(run, [])[1] == "UNREADABLE"


THROUGHPUT = {
    "head": {"images_per_second": [100.0, 100.0], "input_wait_fraction": [0.05, 0.04]},
    "fine_tune": {"images_per_second": [50.0], "input_wait_fraction": [0.02]},
}


def test_the_table_and_the_plot_show_training_images_per_second(tmp_path, capsys) -> None:
    from PIL import Image

    for name, when, metrics in (
        ("fast", "2026-11-25T10:00:00+00:00", {"val_accuracy": 0.9, "throughput": THROUGHPUT}),
        ("older", "2026-11-24T10:00:00+00:00", {"val_accuracy": 0.8}),  # a trainer that reports none
    ):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "run.json").write_bytes(_record(create_time=when, metrics=metrics))
    assert runs.main(["--stack", "dev", "--root", str(tmp_path)]) == 0
    _title, header, fast, older = capsys.readouterr().out.splitlines()
    assert header.split()[3:6] == ["METRIC", "IMAGES/S", "DURATION"]
    # Every epoch of a phase trains as many images: 3 epochs in 2/100 + 1/50 s per image -> 75 images/s.
    assert fast.split()[5] == "75.0" and older.split()[5] == "-"
    picture = tmp_path / "runs.png"
    assert runs.main(["--stack", "dev", "--root", str(tmp_path), "--plot", str(picture)]) == 0
    assert Image.open(picture).size == (800, 800)  # a second panel for images/s under the curves


def test_without_throughput_the_table_has_no_images_per_second_column() -> None:
    record = json.loads(_record(metrics={"val_accuracy": 0.8}))
    assert runs.run_images_per_second(record) is None
    assert not any("IMAGES/S" in line for line in runs.table([runs.Run("r/1", record)]))


def test_the_listing_names_how_each_image_was_built_when_its_build_recorded_it(
    tmp_path, capsys: pytest.CaptureFixture
) -> None:
    image = "us-central1-docker.pkg.dev/p/vertex-training-dev/trainer@sha256:" + "1" * 64
    sources = {
        "builder_image": "gcr.io/cloud-builders/docker@sha256:" + "b" * 64,
        "base_images": ["tensorflow/tensorflow:2.21.0-gpu@sha256:" + "c" * 64],
    }
    for name, extra in (("a", {"image_sources": sources}), ("b", {}), ("c", {"image_sources": sources})):
        run_dir = tmp_path / "runs" / name
        run_dir.mkdir(parents=True)
        record = _record(image=image, end_time=f"2026-11-2{ord(name) - 96}", **extra)
        (run_dir / "run.json").write_bytes(record)
    assert runs.main(["--stack", "dev", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "Images, as their builds resolved them:",
        f"  {image}: FROM {sources['base_images'][0]}; built by {sources['builder_image']}",
    ]
    assert runs.main(["--stack", "dev", "--root", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r.get("image_sources") for r in listed] == [sources, None, sources]
