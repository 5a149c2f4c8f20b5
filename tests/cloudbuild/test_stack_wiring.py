"""Both image builders under Pulumi's mock runtime: the builder's grants, the wiring, preview."""

from __future__ import annotations

import hashlib

import pytest
from pulumi.output import Unknown

from infra.cloudbuild import context, identity
from infra.cloudbuild.component import SOURCE_PREFIX
from infra.cloudbuild.resource import RESOURCE_TYPE as IMAGE_BUILD
from infra.components.dockerfile import base_images, generated
from infra.components.image import data_code_hash
from infra.config import ConfigError
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB
from infra.vertex.provider import CustomJobProvider
from tests.fakes.pulumi_mocks import MockedRun, Registered, object_generation, run_program
from tests.stack.conftest import cached_run, run_stack, stack_config

BUILDER = "vertex-training:cloudbuild:BuilderIdentity"
DOCKER_IMAGE = "docker-build:index:Image"


def builder_member(stack: str) -> str:
    cfg = stack_config(stack)
    return f"serviceAccount:{identity.account_id(stack)}@{cfg.gcp_project}.iam.gserviceaccount.com"


def job(run: MockedRun, name: str) -> Registered:
    return next(r for r in run.by_type(CUSTOM_JOB) if r.name == name)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_builder_has_exactly_three_narrow_grants(stack: str) -> None:
    run, cfg = cached_run(stack), stack_config(stack)
    builder = run.one(BUILDER)
    accounts = [r for r in run.by_type("gcp:serviceaccount/account:Account") if r.parent == builder.urn]
    assert [a.inputs["accountId"] for a in accounts] == [identity.account_id(stack)]
    grants = [r for r in run.resources if r.inputs.get("member") == builder_member(stack)]
    by_type = {g.type: g.inputs for g in grants}
    assert len(grants) == len(by_type) == 3, "one grant of each kind, nothing else"
    repo = by_type["gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"]
    assert (repo["repository"], repo["location"], repo["role"]) == (
        f"vertex-training-{stack}",
        cfg.region,
        "roles/artifactregistry.writer",
    )
    bucket = by_type["gcp:storage/bucketIAMMember:BucketIAMMember"]
    assert (bucket["bucket"], bucket["role"]) == (cfg.bucket_name, "roles/storage.objectViewer")
    # Reads only the context archives, not the training data in the same bucket; lists the bucket, as the
    # source fetch does (objects.list is checked against the bucket's own name).
    assert bucket["condition"]["expression"] == (
        f'resource.name == "projects/_/buckets/{cfg.bucket_name}" || '
        f'resource.name.startsWith("projects/_/buckets/{cfg.bucket_name}/objects/{SOURCE_PREFIX}")'
    )
    project = by_type["gcp:projects/iAMMember:IAMMember"]
    assert (project["project"], project["role"]) == (cfg.gcp_project, "roles/logging.logWriter")
    assert not [r for r in run.resources if r.type.startswith("gcp:serviceaccount/key")]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_build_gets_the_uploaded_archive_and_feeds_both_jobs(stack: str) -> None:
    run, cfg = cached_run(stack), stack_config(stack)
    component = run.named("trainer-image")
    [upload] = [r for r in run.by_type("gcp:storage/bucketObject:BucketObject") if r.parent == component.urn]
    [build] = [r for r in run.by_type(IMAGE_BUILD) if r.parent == component.urn]
    tag = context.archive_tag()
    assert upload.inputs["bucket"] == cfg.bucket_name
    assert upload.inputs["name"] == f"{SOURCE_PREFIX}context-{tag}.tar.gz"
    with open(upload.inputs["source"].path, "rb") as archive:
        assert archive.read() == context.archive_bytes(), "the uploaded file is the deterministic archive"
    inputs = build.inputs
    assert (inputs["source_bucket"], inputs["source_object"]) == (cfg.bucket_name, upload.inputs["name"])
    # Pinned: the job account may write the bucket; the build takes the generation this up uploaded.
    assert inputs["source_generation"] == object_generation(upload.name)
    assert inputs["tag"] == tag and inputs["extra_tags"] == [f"data-{data_code_hash()}"]
    # The build records the digest of the trainer's base (its FROM), the same as the generated Dockerfile's.
    assert inputs["base_images"] == ["tensorflow/tensorflow:2.21.0-gpu"] == base_images(generated("x"))
    assert (inputs["project"], inputs["region"], inputs["repository"]) == (
        cfg.gcp_project,
        cfg.region,
        f"vertex-training-{stack}",
    )
    assert f"serviceAccount:{inputs['service_account']}" == builder_member(stack)
    # The build starts after the upload and the grants; the jobs after the build.
    grants = [r.urn for r in run.resources if r.inputs.get("member") == builder_member(stack)]
    assert {upload.urn, *grants} <= set(build.dependencies)
    # No fixed wait for the grants to propagate: the provider submits a build refused for them again
    # (cloudbuild/provider.py; tests/cloudbuild/test_provider.py).
    assert not [r for r in run.by_type("time:index/sleep:Sleep") if r.parent == component.urn]
    for name in ("data-prep", "train"):
        assert build.urn in job(run, name).dependencies
    chief = job(run, "train").inputs["worker_pools"][0]
    image = f"{cfg.region}-docker.pkg.dev/{cfg.gcp_project}/vertex-training-{stack}/trainer"
    assert (
        chief["image_uri"].startswith(f"{image}@sha256:") and chief["image_uri"] == run.outputs["image_ref"]
    )
    data_pool = job(run, "data-prep").inputs["worker_pools"][0]
    assert data_pool["image_uri"] == f"{image}:data-{data_code_hash()}"
    # How the image was made, as the build reported it, goes to each job for its run.json.
    base = "tensorflow/tensorflow:2.21.0-gpu"
    made = {
        "builder_image": "gcr.io/cloud-builders/docker@sha256:" + "b" * 64,
        "base_images": [f"{base}@sha256:{hashlib.sha256(base.encode()).hexdigest()}"],
    }
    for name in ("data-prep", "train"):
        assert job(run, name).inputs["image_sources"] == made
    services = {s.inputs["service"] for s in run.by_type("gcp:projects/service:Service")}
    assert "cloudbuild.googleapis.com" in services
    assert not run.by_type(DOCKER_IMAGE), "no local Docker build"


def test_preview_needs_no_build_and_leaves_the_digest_unknown() -> None:
    from infra.stack import build

    cfg = stack_config("dev")
    run = run_program(lambda: build(cfg), stack="dev", preview=True)
    assert len(run.by_type(IMAGE_BUILD)) == 1 and not run.by_type(DOCKER_IMAGE)
    # The training job's image is unknown until the build ran; the data job's tag is known already.
    train = job(run, "train").inputs
    assert isinstance(train["worker_pools"][0]["image_uri"], Unknown)
    assert job(run, "data-prep").inputs["worker_pools"][0]["image_uri"].endswith(f":data-{data_code_hash()}")
    # The training job's provider takes the unknown image in check and diff (as the engine hands it over).
    inputs = {k: v for k, v in train.items() if k != "__provider"}
    assert CustomJobProvider().check({}, inputs).failures == []
    known = cached_run("dev")
    olds = {k: v for k, v in job(known, "train").inputs.items() if k != "__provider"}
    assert "worker_pools" in (CustomJobProvider().diff("id", olds, inputs).replaces or [])


@pytest.mark.parametrize(("builder", "enabled"), [("cloudbuild", True), ("docker", False)])
def test_the_cloud_build_api_is_enabled_for_the_cloud_builder(builder: str, enabled: bool) -> None:
    run = run_stack("dev", imageBuilder=builder, killSwitch=False)  # the kill switch enables it too
    services = {s.inputs["service"] for s in run.by_type("gcp:projects/service:Service")}
    assert ("cloudbuild.googleapis.com" in services) is enabled


def test_the_docker_builder_keeps_the_local_build_and_no_cloud_build() -> None:
    run = run_stack("dev", imageBuilder="docker")
    [image] = run.by_type(DOCKER_IMAGE)
    assert not run.by_type(IMAGE_BUILD) and not run.by_type(BUILDER)
    assert not run.by_type("vertex-training:cloudbuild:CloudBuildImage")
    chief = job(run, "train").inputs["worker_pools"][0]
    assert chief["image_uri"] == run.outputs["image_ref"] and "@sha256:" in chief["image_uri"]
    assert job(run, "data-prep").inputs["worker_pools"][0]["image_uri"] in image.inputs["tags"]
    assert image.urn in job(run, "train").dependencies


def test_image_builder_defaults_to_cloudbuild_and_rejects_other_values() -> None:
    assert stack_config("dev").image_builder == "cloudbuild"
    assert stack_config("dev", imageBuilder="docker").image_builder == "docker"
    with pytest.raises(ConfigError, match=r"vertex-training:imageBuilder: 'kaniko' is not one of cloudbuild"):
        stack_config("dev", imageBuilder="kaniko")
