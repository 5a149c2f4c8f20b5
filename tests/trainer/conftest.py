"""Models trained once per session and shared by the test modules that read them."""

from __future__ import annotations

import pytest

from tests.trainer.helpers import make_class_folder, make_folder_data, run, task_command

CLASSES = ["green", "red", "blue"]  # sorted folder order: blue = 0, green = 1, red = 2


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Three classes: a folder of generated PNGs -> TFRecords -> a softmax DenseNet121 -> SavedModel."""
    root = tmp_path_factory.mktemp("classes")
    # The palette is by label, and labels follow sorted names: write each colour under its sorted name.
    make_class_folder(root / "images", sorted(CLASSES), per_class=64)
    data = root / "data"
    make_folder_data(root / "images", data, "--shard-size", "64")
    model_dir = root / "job" / "model"
    cmd = task_command(data, model_dir, "--epochs", "3", "--fine-tune-epochs", "1", "--num-classes", "3")
    result = run(cmd)
    return {
        "root": root,
        "data": data,
        "model_dir": model_dir,
        "log": result.stdout + result.stderr,
        "rc": result.returncode,
    }
