"""tests/tensorflow_rule.py: which tests are marked `tensorflow` by rule, and that a test that trains without
the mark fails (a pytest session of its own, on a small project of tests)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.tensorflow_rule import group_of, training_reason

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("path", "fixtures", "marks", "reason"),
    [
        ("tests/trainer/test_dockerfile.py", [], [], "it is under tests/trainer/"),
        ("tests/trainer/new/test_x.py", ["tmp_path"], [], "it is under tests/trainer/"),
        (
            "tests/vertex/test_batch_local.py",
            ["tmp_path", "trained"],
            [],
            "it uses the training fixture trained",
        ),
        # `retrained` is built on `trained`: pytest's fixture closure names both.
        ("tests/x/test_y.py", ["retrained", "trained"], [], "it uses the training fixture trained"),
        ("tests/x/test_y.py", ["interrupted_runs"], [], "it uses the training fixture interrupted_runs"),
        ("tests/vertex/test_run_local.py", ["tiny_data"], [], "it uses the training fixture tiny_data"),
        ("tests/stack/test_housing_tuning.py", ["tmp_path"], ["slow"], "it is marked slow"),
        ("tests/x/test_y.py", [], ["tensorflow"], "it is marked tensorflow"),
        ("tests/stack/test_stack.py", ["tmp_path", "fake_vertex"], ["parametrize"], None),
        ("tests/trainers_elsewhere/test_y.py", [], [], None),
    ],
)
def test_a_test_is_marked_by_rule(
    path: str, fixtures: list[str], marks: list[str], reason: str | None
) -> None:
    assert training_reason(path, fixtures, marks) == reason


def test_a_shared_model_s_tests_share_a_group_and_the_others_go_by_module() -> None:
    """On two workers each shared trained model is built once: all its tests are one xdist group."""
    assert group_of("tests/trainer/test_retrain.py", ["retrained", "trained"]) == "tensorflow-trained"
    assert group_of("tests/vertex/test_batch_local.py", ["trained"]) == "tensorflow-trained"
    # Its module fixture trains again from the shared model: a group of its own, for another worker.
    retrain = group_of("tests/trainer/test_retrain.py", ["retrained", "trained"], trains_again=True)
    assert retrain == "tensorflow-tests/trainer/test_retrain.py"
    assert group_of("tests/trainer/test_throughput.py", ["interrupted_runs"]) == "tensorflow-interrupted_runs"
    assert group_of("tests/vertex/test_run_local.py", ["tiny_data"]) == "tensorflow-tiny_data"
    # Module-scoped fixtures (a housing run, say) are built once when their module's tests stay together.
    assert group_of("tests/stack/test_housing_example.py", ["tmp_path"]) == (
        "tensorflow-tests/stack/test_housing_example.py"
    )


CONFTEST = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from tests.tensorflow_rule import (
    _trains_only_when_marked, pytest_collection_modifyitems, pytest_configure, pytest_itemcollected,
    pytest_sessionfinish, pytest_unconfigure,
)
"""

UNMARKED = f"""
import subprocess, sys

def test_unmarked_starts_the_trainer():
    done = subprocess.run([sys.executable, "-m", "trainer.task", "--help"], cwd={str(REPO)!r},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

def test_unmarked_that_does_not_train():
    subprocess.run([sys.executable, "-c", "import json"], check=True)

def test_unmarked_imports_tensorflow_in_process():
    # As tests/stack's checks of the trainer's CLI do: an import in the session's own process is not training.
    import tensorflow as tf
    assert tf.__version__
"""

UNDER_TRAINER = """
def test_under_trainer_imports_tensorflow_in_process():
    import tensorflow as tf
    assert tf.constant(1).numpy() == 1
"""


@pytest.mark.tensorflow  # its inner session starts TensorFlow twice
def test_a_test_that_trains_without_the_mark_fails(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "tests" / "trainer").mkdir(parents=True)
    (tmp_path / "tests" / "test_unmarked.py").write_text(textwrap.dedent(UNMARKED))
    (tmp_path / "tests" / "trainer" / "test_marked.py").write_text(textwrap.dedent(UNDER_TRAINER))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rA", "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    # The unmarked trainer's own assertions pass; its teardown fails.
    assert "4 passed, 1 error" in out, out
    assert "PASSED tests/trainer/test_marked.py::test_under_trainer_imports_tensorflow_in_process" in out
    assert "PASSED tests/test_unmarked.py::test_unmarked_that_does_not_train" in out
    assert "PASSED tests/test_unmarked.py::test_unmarked_imports_tensorflow_in_process" in out
    assert "ERROR tests/test_unmarked.py::test_unmarked_starts_the_trainer" in out
    assert "tests/test_unmarked.py::test_unmarked_starts_the_trainer trains (process " in out
    assert "-m trainer.task --help imported TensorFlow)" in out
    assert "without the `tensorflow` mark" in out


SHARED = """
import os, pytest

@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    with open(os.environ["BUILT_LOG"], "a") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_on_two_workers_a_shared_model_is_built_once(tmp_path: Path) -> None:
    """xdist's loadgroup on pytest 9 (tests/tensorflow_rule.py `_name_group`): all tests of one shared model
    run on one worker, which builds the model once, while other tests go to both."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST) + textwrap.dedent(SHARED))
    (tmp_path / "tests").mkdir()
    for i in range(6):
        (tmp_path / "tests" / f"test_uses_{i}.py").write_text(f"def test_uses_{i}(trained):\n    pass\n")
        (tmp_path / "tests" / f"test_other_{i}.py").write_text(f"def test_other_{i}():\n    pass\n")
    built = tmp_path / "built.log"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "tests",
        ],
        cwd=tmp_path,
        env={**os.environ, "BUILT_LOG": str(built)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(built.read_text().split()) == 1, done.stdout
    workers = {line.split()[0] for line in done.stdout.splitlines() if "PASSED tests/test_uses_" in line}
    assert len(workers) == 1, done.stdout
