"""A run's checkpoints live in a folder named by its settings: the same run finds them, another run never."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from trainer import distribute, run_identity, task
from trainer.metadata import Metadata
from trainer.run_identity import RunSettings

CHIEF = distribute.role(None)
SETTINGS = RunSettings(
    data_dir="/data",
    data_fingerprint="abc",
    image_size=32,
    class_names=("cats", "dogs"),
    backbone="densenet121",
    weights="none",
    epochs=3,
    fine_tune_epochs=1,
    batch_size=16,
    learning_rate=0.001,
    mixed_precision="auto",
)


def test_the_same_settings_name_the_same_folder_and_any_change_another() -> None:
    assert RunSettings(**dataclasses.asdict(SETTINGS)).run_id() == SETTINGS.run_id()
    for field in dataclasses.fields(RunSettings):
        value = getattr(SETTINGS, field.name)
        other = ("x",) if isinstance(value, tuple) else type(value)(value * 2 if value else 1)
        changed = dataclasses.replace(SETTINGS, **{field.name: other})
        assert changed.run_id() != SETTINGS.run_id(), field.name
        assert [d.split()[0] for d in run_identity.differences(SETTINGS, changed)] == [field.name]


def test_settings_come_from_the_arguments_and_the_data(tmp_path: Path) -> None:
    meta = Metadata(image_size=32, class_names=["a", "b"], counts={}, fingerprint="f1")
    args = task.parse_args(
        ["--data-dir", "data/", "--model-dir", str(tmp_path / "m"), "--batch-size", "8"], {}
    )
    settings = run_identity.settings_for(args, meta)
    assert settings.data_dir == os.path.abspath("data")  # the same data however the path was written
    assert (settings.batch_size, settings.data_fingerprint, settings.class_names) == (8, "f1", ("a", "b"))
    assert run_identity.place("gs://bucket/data/") == "gs://bucket/data"


def test_a_first_run_records_its_settings_and_a_restart_of_it_says_nothing(tmp_path: Path) -> None:
    folder, line = run_identity.start(str(tmp_path), SETTINGS, CHIEF)
    assert (folder, line) == (str(tmp_path / SETTINGS.run_id()), None)
    recorded = json.loads((tmp_path / SETTINGS.run_id() / run_identity.SETTINGS_FILE).read_text())
    assert RunSettings.from_json(recorded) == SETTINGS
    (tmp_path / "run-0123456789ab").mkdir()  # another run appearing later changes nothing for this one
    assert run_identity.start(str(tmp_path), SETTINGS, CHIEF) == (folder, None)


def test_another_run_is_named_with_what_differs_and_never_shared(tmp_path: Path) -> None:
    run_identity.start(str(tmp_path), SETTINGS, CHIEF)
    other = dataclasses.replace(SETTINGS, batch_size=8, class_names=("a", "b", "c"))
    folder, line = run_identity.start(str(tmp_path), other, CHIEF)
    assert folder == str(tmp_path / other.run_id()) != str(tmp_path / SETTINGS.run_id())
    assert line is not None
    assert f"{tmp_path / SETTINGS.run_id()} holds the checkpoints of another run (" in line
    assert "class_names ['cats', 'dogs'] -> ['a', 'b', 'c'], batch_size 16 -> 8" in line
    assert f"starts fresh in {folder}, where the same command resumes it" in line
    assert "--checkpoint-dir" in line


def test_checkpoints_from_before_run_folders_are_left_alone_and_named(tmp_path: Path) -> None:
    (tmp_path / "done-head").mkdir()
    (tmp_path / "done-head" / "DONE").write_text("head\n")
    folder, line = run_identity.start(str(tmp_path), SETTINGS, CHIEF)
    assert line is not None and "a run that recorded no settings (an earlier version)" in line
    assert (tmp_path / "done-head" / "DONE").exists()
    assert folder.startswith(str(tmp_path / "run-"))


def test_a_worker_records_nothing(tmp_path: Path) -> None:
    worker = distribute.Role("worker", 0, is_chief=False)
    folder, _ = run_identity.start(str(tmp_path), SETTINGS, worker)
    assert folder == str(tmp_path / SETTINGS.run_id()) and not Path(folder).exists()
