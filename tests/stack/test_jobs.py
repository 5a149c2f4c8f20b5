"""The jobs' command lines against the trainer's own CLIs, and the content hashes that decide what reruns."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.components import image
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from infra.vertex.lifecycle.output_files import output_dirs
from infra.workloads.jobs import logs_url
from tests.stack.conftest import BUILTIN_TRAINER_STACKS, STACKS, cached_run


def _pools(stack: str) -> dict[str, dict]:
    return {r.name: r.inputs for r in cached_run(stack).by_type(RESOURCE_TYPE)}


@pytest.mark.parametrize("stack", BUILTIN_TRAINER_STACKS)
def test_job_command_lines_parse_with_the_trainer_clis(stack: str) -> None:
    """The stack and the trainer never import each other: the CLI contract is what binds them."""
    from trainer import create_tfrecords, task

    jobs = _pools(stack)
    data_pool = jobs["data-prep"]["worker_pools"][0]
    data = create_tfrecords.parse_args(data_pool["args"])
    assert data.output == cached_run(stack).outputs["data_dir"]

    train_job = jobs["train"]
    env = output_dirs(train_job["base_output_dir"])
    for pool in train_job["worker_pools"]:
        args = task.parse_args(pool["args"], env=env)
        assert args.data_dir == data.output
        assert args.image_size == data.image_size
        assert args.model_dir == env["AIP_MODEL_DIR"]
        assert args.checkpoint_dir != env["AIP_CHECKPOINT_DIR"], "checkpoints go where the lifecycle rule is"


def _tree(root: Path, files: dict[str, str]) -> Path:
    trainer = root / "trainer"
    for name, text in files.items():
        (trainer / name).parent.mkdir(parents=True, exist_ok=True)
        (trainer / name).write_text(text)
    return trainer


TREE = {
    "__init__.py": "",
    "Dockerfile": "FROM python:3.11-slim\n",
    "requirements.txt": "tensorflow==2.21.0\n",
    ".dockerignore": "tests/\n*.md\n",
    "create_tfrecords.py": "from trainer import records\nfrom trainer.errors import Oops\n",
    "records.py": "from . import shapes\n",
    "shapes.py": "X = 1\n",
    "errors.py": "class Oops(Exception): ...\n",
    "task.py": "from trainer import model, records\n",
    "model.py": "Y = 2\n",
}


def test_data_code_follows_the_entry_points_imports(tmp_path: Path) -> None:
    trainer = _tree(tmp_path, TREE)
    build = [".dockerignore", "Dockerfile", "__init__.py", "requirements.txt"]
    code = ["create_tfrecords.py", "errors.py", "records.py", "shapes.py"]
    assert image.data_code_files(trainer) == sorted(build + code)


@pytest.mark.parametrize(
    ("edit", "content_changes", "data_changes"),
    [
        ("task.py", True, False),
        ("model.py", True, False),
        ("shapes.py", True, True),  # imported by records.py, imported by create_tfrecords.py
        ("requirements.txt", True, True),
        ("README.md", False, False),  # excluded by .dockerignore: not in the image
        ("tests/test_x.py", False, False),
        ("__pycache__/task.cpython-311.pyc", False, False),
    ],
)
def test_hashes_move_exactly_with_what_each_job_runs(tmp_path, edit, content_changes, data_changes) -> None:
    trainer = _tree(tmp_path, TREE)
    before = image.content_hash(trainer), image.data_code_hash(trainer)
    (trainer / edit).parent.mkdir(parents=True, exist_ok=True)
    (trainer / edit).write_text("changed\n")
    after = image.content_hash(trainer), image.data_code_hash(trainer)
    assert (before[0] != after[0], before[1] != after[1]) == (content_changes, data_changes)


def test_hashes_are_stable(tmp_path: Path) -> None:
    a, b = _tree(tmp_path / "a", TREE), _tree(tmp_path / "b", TREE)
    assert image.content_hash(a) == image.content_hash(b)
    assert image.data_code_hash(a) == image.data_code_hash(b)


def test_logs_url_names_the_vertex_job() -> None:
    url = logs_url("projects/123/locations/us-central1/customJobs/987", "my-project")
    assert "987" in url and url.endswith("?project=my-project")
    assert logs_url("local/abc", "p") == "" and logs_url(None, "p") == ""


def test_jobs_run_with_tensorflow_quiet_unless_overridden() -> None:
    from infra.workloads.jobs import job_env

    assert job_env({}) == {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
    assert job_env({"TF_CPP_MIN_LOG_LEVEL": "0"})["TF_CPP_MIN_LOG_LEVEL"] == "0"
    for pools in (job["worker_pools"] for job in _pools("local").values()):
        assert pools[0]["env"]["PYTHONUNBUFFERED"] == "1" and "TF_CPP_MIN_LOG_LEVEL" in pools[0]["env"]


@pytest.mark.parametrize("stack", STACKS)
def test_the_stack_exports_what_the_training_run_gave(stack: str) -> None:
    outputs = cached_run(stack).outputs
    assert {"val_accuracy", "train_duration_seconds", "train_estimated_cost_usd"} <= outputs.keys()
