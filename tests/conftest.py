"""Fixtures shared across test areas."""

from collections.abc import Iterator

import pytest

from tests.session_builds import built_once

# Marks the tests that train, by rule, and fails a test that trains unmarked: tests/tensorflow_rule.py.
from tests.tensorflow_rule import (  # noqa: F401  (pytest finds hooks and fixtures by name here)
    _trains_only_when_marked,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_ignore_collect,
    pytest_itemcollected,
    pytest_sessionfinish,
    pytest_unconfigure,
)

CLASSES = ["green", "red", "blue"]  # sorted folder order: blue = 0, green = 1, red = 2
HEAD_EPOCHS, FINE_TUNE_EPOCHS = 3, 1  # the shared run's


@pytest.fixture
def fake_vertex(monkeypatch: pytest.MonkeyPatch) -> Iterator["FakeJobService"]:  # noqa: F821
    """A fake Vertex AI JobService on localhost; VERTEX_AI_EMULATOR_HOST points the real client at it."""
    from tests.fakes.vertex import FakeJobService

    server = FakeJobService()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", server.start())
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def no_google_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches a real Google API with a developer's credentials (the price catalog, say)."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/no-credentials-in-tests.json")


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Three classes: a folder of generated PNGs -> TFRecords -> a softmax DenseNet121 -> SavedModel; trained
    once per session for the trainer's tests and the batch prediction's local end-to-end test (on two
    workers too: the first to need it builds it under a file lock, the others read what it left). The run is
    SIGKILLed once head epoch 2 is checkpointed and the same command resumes it (what
    tests/trainer/test_training.py checks): one run, as an uninterrupted one would leave it."""
    return built_once(tmp_path_factory, "trained", lambda: _train(tmp_path_factory))


def _train(tmp_path_factory: pytest.TempPathFactory) -> dict:
    import signal
    import subprocess

    from tests.trainer.helpers import (
        REPO,
        make_class_folder,
        make_folder_data,
        run,
        task_command,
        trainer_env,
    )

    root = tmp_path_factory.mktemp("classes")
    # The palette is by label, and labels follow sorted names: write each colour under its sorted name.
    make_class_folder(root / "images", sorted(CLASSES), per_class=64)
    data = root / "data"
    make_folder_data(root / "images", data, "--shard-size", "64")
    model_dir = root / "job" / "model"
    cmd = task_command(
        data, model_dir, "--epochs", str(HEAD_EPOCHS), "--fine-tune-epochs", str(FINE_TUNE_EPOCHS)
    )
    cmd += ["--num-classes", "3"]
    first = subprocess.Popen(
        cmd, cwd=REPO, env=trainer_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    first_log = []
    assert first.stdout is not None
    for line in first.stdout:  # the trainer starts no process of its own: its end closes the pipe
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
        "log": "".join(first_log) + second.stdout + second.stderr,
        "rc": second.returncode,
    }
