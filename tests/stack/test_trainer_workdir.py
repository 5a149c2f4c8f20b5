"""The image's WORKDIR and the project directory that stands for it (a user Dockerfile's own is respected)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest
from google.cloud import aiplatform_v1

from infra.components.dockerfile import dockerfile_text, generated
from infra.components.trainer_workdir import layout, local_workdir
from infra.vertex.runners.local.runner import WORKDIR_ENV, replica_plan
from infra.workloads.jobs import code_env
from tests.stack.conftest import ROOT

BUILTIN = ROOT / "trainer"


def test_the_built_in_trainer_runs_from_its_images_app_which_is_the_project_root() -> None:
    image = layout(dockerfile_text(BUILTIN))
    assert (image.workdir, image.context_dir) == (PurePosixPath("/app"), PurePosixPath("/app/trainer"))
    assert local_workdir(BUILTIN, dockerfile_text(BUILTIN), ROOT) == ROOT
    # The local runner's default (the program directory): no entry, the job's inputs stay as they were.
    assert code_env(BUILTIN, "local") == {"PYTHONPATH": str(ROOT)}


def test_the_generated_dockerfile_works_in_the_directory_it_copies() -> None:
    image = layout(generated("housing"))
    assert image.workdir == image.context_dir == PurePosixPath("/app/housing")


@pytest.mark.parametrize(
    ("dockerfile", "relative"),
    [
        ("FROM python:3.12\nWORKDIR /srv\nCOPY . .\n", "."),
        ("FROM python:3.12\nWORKDIR /srv\nCOPY --chown=1000:1000 ./ /srv/\nWORKDIR src\n", "src"),
        ('FROM python:3.12\nWORKDIR /code\nCOPY [".", "/code/app"]\n', ".."),
        (
            "FROM python:3.12 AS build\nWORKDIR /x\nCOPY . /x/deep\nFROM python:3.12\nWORKDIR /w\n"
            "COPY --from=build /x /w\nCOPY . \\\n  /w\n",
            ".",
        ),
        ("FROM python:3.12\n# WORKDIR /nowhere\nCOPY . /app\n", "."),  # no WORKDIR: its own directory
        ("FROM python:3.12\nWORKDIR /app\nCOPY src/ /app/src\n", "."),  # the root is not copied
        ("FROM python:3.12\nWORKDIR /app/missing\nCOPY . /app\n", "."),  # not a directory here
    ],
)
def test_a_user_dockerfiles_workdir_maps_to_the_directory_it_copied(
    tmp_path: Path, dockerfile: str, relative: str
) -> None:
    project = tmp_path / "project"
    trainer = project / "mine"
    (trainer / "src").mkdir(parents=True)
    assert local_workdir(trainer, dockerfile, project) == (trainer / relative).resolve()


def test_a_workdir_above_the_project_falls_back_to_the_trainer_directory(tmp_path: Path) -> None:
    trainer = tmp_path / "project" / "mine"
    trainer.mkdir(parents=True)
    dockerfile = "FROM python:3.12\nWORKDIR /\nCOPY . /a/b/c\n"
    assert local_workdir(trainer, dockerfile, tmp_path / "project") == trainer


def test_a_local_job_gets_the_directory_and_a_vertex_job_nothing() -> None:
    housing = ROOT / "examples" / "housing"
    assert code_env(housing, "local") == {"PYTHONPATH": str(housing.parent), WORKDIR_ENV: "examples/housing"}
    assert code_env(housing, "vertex") == {}  # the image's WORKDIR (/app/housing)


def test_the_directory_is_kept_relative_to_the_project_so_another_clone_runs_the_same_job(
    tmp_path: Path,
) -> None:
    clones = [tmp_path / "a" / "project", tmp_path / "b" / "vertex-training"]
    envs = []
    for clone in clones:
        (clone / "examples" / "mine").mkdir(parents=True)
        (clone / "examples" / "mine" / "requirements.txt").write_text("")
        envs.append(code_env(clone / "examples" / "mine", "local", clone)[WORKDIR_ENV])
    assert envs == ["examples/mine", "examples/mine"]


def _job(workdir: str) -> aiplatform_v1.CustomJob:
    container = aiplatform_v1.ContainerSpec(
        image_uri="local", command=["python", "train.py"], env=[{"name": WORKDIR_ENV, "value": workdir}]
    )
    pool = aiplatform_v1.WorkerPoolSpec(replica_count=1, container_spec=container)
    return aiplatform_v1.CustomJob(job_spec=aiplatform_v1.CustomJobSpec(worker_pool_specs=[pool]))


def test_the_local_runner_runs_a_relative_directory_under_its_own_and_an_absolute_one_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    [replica] = replica_plan(_job("examples/mine"), str(tmp_path / "out"))
    assert replica["cwd"] == str(tmp_path / "examples" / "mine") and WORKDIR_ENV not in replica["env"]
    # A job created before the directory was stored relative (its state holds the absolute path).
    [replica] = replica_plan(_job("/elsewhere/mine"), str(tmp_path / "out"))
    assert replica["cwd"] == "/elsewhere/mine"
