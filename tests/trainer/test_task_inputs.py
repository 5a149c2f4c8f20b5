"""Trainer CLI: AIP_* defaults and bad input failing fast with a message that names the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trainer.helpers import make_synthetic
from trainer import task
from trainer.errors import TrainerError


def test_output_dirs_default_to_vertex_variables() -> None:
    env = {
        "AIP_MODEL_DIR": "gs://b/out/model/",
        "AIP_CHECKPOINT_DIR": "gs://b/out/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": "gs://b/out/logs/",
    }
    args = task.parse_args(["--data-dir", "gs://b/data"], env)
    assert (args.model_dir, args.checkpoint_dir, args.tensorboard_dir) == (
        "gs://b/out/model/",
        "gs://b/out/checkpoints/",
        "gs://b/out/logs/",
    )
    args = task.parse_args(["--data-dir", "d", "--model-dir", "/tmp/run/model"], {})
    assert (args.checkpoint_dir, args.tensorboard_dir) == ("/tmp/run/checkpoints", "/tmp/run/logs")


def test_model_dir_is_required_without_vertex(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        task.parse_args(["--data-dir", "d"], {})
    assert "--model-dir is required when AIP_MODEL_DIR is not set" in capsys.readouterr().err


def test_missing_data_dir_names_the_command_that_creates_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        task.main(["--data-dir", str(tmp_path / "nope"), "--model-dir", str(tmp_path / "m")])
    assert "no metadata.json" in str(exc.value) and "trainer.create_tfrecords" in str(exc.value)
    assert not (tmp_path / "m").exists()


def test_image_size_contradicting_metadata_fails_before_training(tmp_path: Path) -> None:
    make_synthetic(tmp_path / "d", count=8)
    with pytest.raises(SystemExit) as exc:
        task.main(
            ["--data-dir", str(tmp_path / "d"), "--model-dir", str(tmp_path / "m"), "--image-size", "224"]
        )
    message = str(exc.value)
    assert "--image-size 224 contradicts" in message and "image_size 32" in message
    assert "--image-size 32" in message  # names the fix


def test_data_dir_without_records_or_two_classes(tmp_path: Path) -> None:
    from trainer import metadata

    make_synthetic(tmp_path / "d", count=8)
    for shard in (tmp_path / "d").glob("valid-*.tfrec"):
        shard.unlink()
    with pytest.raises(TrainerError, match="no valid images"):
        metadata.read(str(tmp_path / "d"))
    meta = json.loads((tmp_path / "d" / "metadata.json").read_text())
    meta["class_names"] = ["a", "b", "c"]
    assert task.check_data(metadata.Metadata(**meta), "d", None, 3) == 32  # three classes train
    with pytest.raises(TrainerError, match=r"--num-classes 5 contradicts .*Pass --num-classes 3"):
        task.check_data(metadata.Metadata(**meta), "d", None, 5)
    meta["class_names"] = ["a"]
    with pytest.raises(TrainerError, match="needs at least two"):
        task.check_data(metadata.Metadata(**meta), "d", None)


def test_backbone_choices_are_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    from trainer import backbones

    base = ["--data-dir", "d", "--model-dir", "m"]
    assert task.parse_args(base, {}).backbone == "densenet121"
    for name in backbones.BACKBONES:
        assert task.parse_args([*base, "--backbone", name], {}).backbone == name
    with pytest.raises(SystemExit):
        task.parse_args([*base, "--backbone", "vgg16"], {})
    assert "invalid choice: 'vgg16'" in capsys.readouterr().err


def test_phase_plan() -> None:
    assert task.plan_phases(3, 2) == [task.Phase("head", 0, 3), task.Phase("fine_tune", 3, 5)]
    assert task.plan_phases(2, 0) == [task.Phase("head", 0, 2)]


def test_corrupt_metadata_is_a_clear_error(tmp_path: Path) -> None:
    from trainer import metadata

    (tmp_path / "metadata.json").write_text('{"image_size": 32,')  # truncated
    with pytest.raises(TrainerError, match=r"not a trainer metadata file.*recreate the data"):
        metadata.read(str(tmp_path))
