"""The trainer's own printed commands run as printed, from a project root in a fresh shell (the rest:
tests/ci/test_printed_commands.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.printed_commands import PLACEHOLDER, commands, project_copy, run_local
from tests.trainer.helpers import make_class_folder
from trainer import metadata
from trainer.errors import TrainerError


def test_the_conversion_a_data_dir_of_images_asks_for_runs_as_printed(tmp_path: Path) -> None:
    images = make_class_folder(tmp_path / "photos", ["cats", "dogs"], per_class=3)
    with pytest.raises(TrainerError) as raised:
        metadata.read(str(images))
    (command,) = commands(str(raised.value))
    assert command.startswith(".venv/bin/python -m trainer.create_tfrecords ")
    done = run_local(command, project_copy(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert metadata.read(f"{images}-tfrecords").class_names == ["cats", "dogs"]
    with pytest.raises(TrainerError) as raised:
        metadata.read(str(tmp_path / "empty"))
    (command,) = commands(str(raised.value))  # no data at all: where the user's images are is theirs to say
    assert command.startswith(".venv/bin/python -m trainer.create_tfrecords ") and PLACEHOLDER.search(command)
