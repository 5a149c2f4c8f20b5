"""The serving image (serving/) in the stack: built by the stack's image builder into its repository, beside
the trainer's, only when something serves (a model version or a batch job), and named by digest where used."""

from __future__ import annotations

import pytest

from infra.cloudbuild import context
from infra.cloudbuild.resource import RESOURCE_TYPE as IMAGE_BUILD
from infra.components.image import SERVING_DIR, SERVING_IMAGE_NAME, serving_tag
from infra.vertex.batch.resource import RESOURCE_TYPE as BATCH
from infra.vertex.model.resource import RESOURCE_TYPE as MODEL_VERSION
from tests.stack.conftest import cached_run, run_stack, stack_config

DOCKER_IMAGE = "docker-build:index:Image"
BUILDER = "vertex-training:cloudbuild:BuilderIdentity"
BATCH_KEY = {"images": "gs://my-bucket/to-classify/"}


def test_prod_builds_serving_in_cloud_build_with_the_trainers_builder_and_registers_with_it() -> None:
    run, cfg = cached_run("prod"), stack_config("prod")
    builds = {r.inputs["image_name"]: r for r in run.by_type(IMAGE_BUILD)}
    assert sorted(builds) == ["serving", "trainer"]
    serving = builds[SERVING_IMAGE_NAME]
    # Tagged by serving/'s own archive, no data tag: a trainer change leaves this image alone.
    assert serving.inputs["tag"] == context.archive_tag(SERVING_DIR)
    assert serving.inputs.get("extra_tags", []) == []
    assert len(run.by_type(BUILDER)) == 1, "one builder account builds both images"
    assert serving.inputs["service_account"] == builds["trainer"].inputs["service_account"]
    model = run.one(MODEL_VERSION)
    assert serving.urn in model.dependencies
    assert cfg.model_registry.register


def test_the_docker_builder_pushes_serving_by_content_tag_into_the_stacks_repository() -> None:
    run = run_stack("prod", imageBuilder="docker")
    images = {r.inputs["context"]["location"]: r for r in run.by_type(DOCKER_IMAGE)}
    serving = images[str(SERVING_DIR)]
    (tag,) = serving.inputs["tags"]
    assert tag.endswith(f"/vertex-training-prod/serving:{serving_tag()}")
    assert serving.inputs["dockerfile"] == {"location": str(SERVING_DIR / "Dockerfile")}
    assert run.one(MODEL_VERSION).dependencies and serving.urn in run.one(MODEL_VERSION).dependencies


def test_a_batch_job_without_registration_is_served_by_it_too() -> None:
    run = run_stack("dev", batchPrediction=BATCH_KEY)
    serving = next(r for r in run.by_type(IMAGE_BUILD) if r.inputs["image_name"] == SERVING_IMAGE_NAME)
    assert serving.urn in run.one(BATCH).dependencies
    assert not run.by_type(MODEL_VERSION)


@pytest.mark.parametrize("builder", ["cloudbuild", "docker"])
def test_a_stack_that_serves_nothing_builds_no_serving_image(builder: str) -> None:
    run = run_stack("dev", imageBuilder=builder)
    assert not stack_config("dev").model_registry.register
    names = [r.inputs.get("image_name") for r in run.by_type(IMAGE_BUILD)]
    contexts = [r.inputs["context"]["location"] for r in run.by_type(DOCKER_IMAGE)]
    assert SERVING_IMAGE_NAME not in names and str(SERVING_DIR) not in contexts
    assert run.outputs["serving_image_ref"] == ""


def test_a_server_change_makes_a_new_serving_tag(tmp_path) -> None:
    import shutil

    copy = tmp_path / "serving"
    shutil.copytree(SERVING_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = serving_tag(copy)
    (copy / "app.py").write_text((copy / "app.py").read_text() + "\n# edited\n")
    assert serving_tag(copy) != before
