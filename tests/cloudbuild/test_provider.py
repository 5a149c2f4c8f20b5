"""ImageBuildProvider driving the real Cloud Build / Artifact Registry / Logging clients against the fake."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from typing import Any

import google.auth
import grpc
import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud.devtools import cloudbuild_v1
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from infra.cloudbuild import spec
from infra.cloudbuild.builds import BuildApi
from infra.cloudbuild.errors import BuildError
from infra.cloudbuild.provider import ImageBuildProvider
from infra.dynamic import propagation
from tests.fakes.cloudbuild import FakeCloudBuild

Status = cloudbuild_v1.Build.Status
PARENT = "projects/my-proj/locations/us-central1"
IMAGE = "us-central1-docker.pkg.dev/my-proj/vertex-training/trainer"


def props(**overrides: Any) -> dict[str, Any]:
    values = {
        "project": "my-proj",
        "region": "us-central1",
        "repository": "vertex-training",
        "image_name": "trainer",
        "tag": "0123456789abcdef",
        "extra_tags": ["data-fedcba9876543210"],
        "source_bucket": "my-proj-dev-training",
        "source_object": "cloudbuild/context-0123456789abcdef.tar.gz",
        "source_generation": 1764000000123456.0,  # a double, as Pulumi sends it
        "service_account": "vt-dev-build@my-proj.iam.gserviceaccount.com",
        "timeout_seconds": 3600.0,  # Pulumi sends numbers as doubles
        "poll_interval_seconds": 0.01,
    }
    values.update(overrides)
    return values


def created_builds(fake: FakeCloudBuild) -> list[cloudbuild_v1.Build]:
    return [request.build for name, request in fake.calls if name == "CreateBuild"]


def test_builds_pushes_and_outputs_the_digest(fake_cloudbuild: FakeCloudBuild) -> None:
    result = ImageBuildProvider().create(props())

    [build] = fake_cloudbuild.builds.values()
    assert build.status == Status.SUCCESS
    digest = result.outs["digest"]
    assert digest.startswith("sha256:") and result.outs["image_ref"] == f"{IMAGE}@{digest}"
    assert result.id == f"{IMAGE}:0123456789abcdef"
    assert result.outs["build_name"] == build.name and build.name.startswith(PARENT + "/builds/")
    assert result.outs["log_url"] == build.log_url
    # Both tags now point at the pushed image; the data tag too.
    tags = "projects/my-proj/locations/us-central1/repositories/vertex-training/packages/trainer/tags"
    assert fake_cloudbuild.tags[f"{tags}/0123456789abcdef"].endswith(digest)
    assert fake_cloudbuild.tags[f"{tags}/data-fedcba9876543210"].endswith(digest)
    # The request: the uploaded archive, docker build of its Dockerfile, as the builder account, logs only
    # to Cloud Logging (required with a user-specified account), tagged for adoption, with the timeout.
    [request] = created_builds(fake_cloudbuild)
    assert request.source.storage_source.bucket == "my-proj-dev-training"
    assert request.source.storage_source.object_ == "cloudbuild/context-0123456789abcdef.tar.gz"
    assert request.source.storage_source.generation == 1764000000123456, "the uploaded generation, pinned"
    assert request.steps[0].name == spec.DOCKER_BUILDER
    assert request.steps[0].args[:3] == ["build", "--file", "Dockerfile"] and request.steps[0].args[-1] == "."
    assert list(request.images) == [f"{IMAGE}:0123456789abcdef", f"{IMAGE}:data-fedcba9876543210"]
    assert request.service_account == (
        "projects/my-proj/serviceAccounts/vt-dev-build@my-proj.iam.gserviceaccount.com"
    )
    assert request.options.logging == cloudbuild_v1.BuildOptions.LoggingMode.CLOUD_LOGGING_ONLY
    assert list(request.tags) == ["trainer-0123456789abcdef"]
    assert request.timeout.seconds == 3600
    methods = fake_cloudbuild.methods()
    assert methods[:3] == ["GetTag", "ListBuilds", "CreateBuild"] and set(methods[3:]) == {"GetBuild"}


def test_an_image_already_pushed_under_the_tag_is_not_rebuilt(fake_cloudbuild: FakeCloudBuild) -> None:
    digest = "sha256:" + "ab" * 32
    fake_cloudbuild.push(f"{IMAGE}:0123456789abcdef", digest)

    result = ImageBuildProvider().create(props())

    assert result.outs["digest"] == digest and result.outs["build_name"] == ""
    assert fake_cloudbuild.methods() == ["GetTag"] and not fake_cloudbuild.builds


def test_a_running_build_of_the_same_tag_is_adopted(fake_cloudbuild: FakeCloudBuild) -> None:
    """An interrupted `pulumi up` left its build running: the next one waits for it, not a second build."""
    earlier = spec.build_request(spec.with_defaults(props()))
    name = fake_cloudbuild.add_build(PARENT, earlier, Status.WORKING, advance=True)
    other = spec.build_request(spec.with_defaults(props(tag="ffffffffffffffff")))
    fake_cloudbuild.add_build(PARENT, other, Status.WORKING)

    result = ImageBuildProvider().create(props())

    assert "CreateBuild" not in fake_cloudbuild.methods()
    assert result.outs["build_name"] == name
    assert fake_cloudbuild.builds[name].status == Status.SUCCESS
    assert result.outs["digest"] == fake_cloudbuild.builds[name].results.images[0].digest


def test_a_finished_build_whose_image_is_gone_is_built_again(fake_cloudbuild: FakeCloudBuild) -> None:
    """The build history says SUCCESS, but the registry's cleanup deleted the tag: build, do not adopt."""
    old = fake_cloudbuild.add_build(PARENT, spec.build_request(spec.with_defaults(props())), Status.WORKING)
    fake_cloudbuild.finish(old, Status.SUCCESS)
    fake_cloudbuild.tags.clear()

    result = ImageBuildProvider().create(props())

    assert len(created_builds(fake_cloudbuild)) == 1 and result.outs["build_name"] != old


def test_a_failed_build_names_status_reason_log_tail_and_console_link(
    fake_cloudbuild: FakeCloudBuild,
) -> None:
    fake_cloudbuild.outcome = Status.FAILURE
    fake_cloudbuild.failure_log = [
        "#7 [3/5] RUN python -m pip install -r requirements.txt",
        "#7 ERROR: No matching distribution found for tensorflw==2.21",
    ]

    with pytest.raises(BuildError) as caught:
        ImageBuildProvider().create(props())

    [build] = fake_cloudbuild.builds.values()
    message = str(caught.value)
    assert build.name in message and "ended FAILURE" in message
    assert "step exited with non-zero status: 1" in message
    assert "End of the build log:" in message
    assert "No matching distribution found for tensorflw==2.21" in message
    assert message.index("RUN python -m pip") < message.index("No matching distribution")
    assert build.log_url in message
    assert "ListLogEntries" in fake_cloudbuild.logging.methods()


def test_a_failed_build_still_reports_when_its_log_cannot_be_read(fake_cloudbuild: FakeCloudBuild) -> None:
    fake_cloudbuild.outcome = Status.FAILURE
    fake_cloudbuild.logging.fail("ListLogEntries", grpc.StatusCode.PERMISSION_DENIED)

    with pytest.raises(BuildError, match=r"ended FAILURE(.|\n)*the log could not be read(.|\n)*console"):
        ImageBuildProvider().create(props())


def test_transient_faults_are_retried(fake_cloudbuild: FakeCloudBuild) -> None:
    fake_cloudbuild.fail("GetTag", grpc.StatusCode.UNAVAILABLE, times=2)
    fake_cloudbuild.fail("ListBuilds", grpc.StatusCode.DEADLINE_EXCEEDED)
    fake_cloudbuild.fail("GetBuild", grpc.StatusCode.UNAVAILABLE, times=2)

    result = ImageBuildProvider().create(props())

    assert result.outs["digest"].startswith("sha256:")
    assert fake_cloudbuild.methods().count("GetTag") == 3
    assert len(fake_cloudbuild.builds) == 1


def test_a_create_whose_response_was_lost_is_not_submitted_twice(fake_cloudbuild: FakeCloudBuild) -> None:
    fake_cloudbuild.fail("CreateBuild", grpc.StatusCode.UNAVAILABLE, applied=True)

    result = ImageBuildProvider().create(props())

    assert len(fake_cloudbuild.builds) == 1 and fake_cloudbuild.methods().count("CreateBuild") == 1
    assert result.outs["build_name"] == next(iter(fake_cloudbuild.builds))


def test_permission_denied_says_which_roles_are_missing(fake_cloudbuild: FakeCloudBuild) -> None:
    fake_cloudbuild.fail("CreateBuild", grpc.StatusCode.PERMISSION_DENIED)

    with pytest.raises(BuildError, match=r"roles/cloudbuild\.builds\.editor(.|\n)*serviceAccountUser"):
        ImageBuildProvider().create(props())
    assert not fake_cloudbuild.builds


def test_a_region_where_the_project_cannot_build_says_so(fake_cloudbuild: FakeCloudBuild) -> None:
    # Wording from cloud.google.com/build/quotas, "Region restrictions for some projects".
    fake_cloudbuild.fail(
        "CreateBuild",
        grpc.StatusCode.FAILED_PRECONDITION,
        message="due to quota restrictions, cannot run builds in this region",
    )
    with pytest.raises(BuildError, match=r"imageBuilder docker") as raised:
        ImageBuildProvider().create(props())
    assert raised.value.__cause__ is None and raised.value.api_error is not None
    assert not fake_cloudbuild.builds


def test_a_transient_fault_that_persists_gives_up_with_advice(
    fake_cloudbuild: FakeCloudBuild, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr("infra.dynamic.retries.RETRY_ATTEMPTS", 3)
    fake_cloudbuild.fail("GetTag", grpc.StatusCode.UNAVAILABLE, times=3)

    with pytest.raises(BuildError, match=r"failed 3 times with a transient error \(UNAVAILABLE\)"):
        ImageBuildProvider().create(props())


def test_read_reports_the_pushed_digest_or_gone(fake_cloudbuild: FakeCloudBuild) -> None:
    created = ImageBuildProvider().create(props())
    state = {**props(), **created.outs}

    read = ImageBuildProvider().read(created.id, state)
    assert read.id == created.id and read.outs["digest"] == created.outs["digest"]
    assert read.outs["build_name"] == created.outs["build_name"]

    fake_cloudbuild.tags.clear()
    gone = ImageBuildProvider().read(created.id, state)
    assert gone.id == "" and gone.outs == {}


def test_check_accepts_preview_unknowns_and_rejects_bad_values() -> None:
    provider = ImageBuildProvider()
    unknowns = props(service_account=Unknown(), source_bucket=UNKNOWN, source_object=Unknown())
    assert provider.check({}, unknowns).failures == []
    failures = provider.check({}, props(tag="bad tag!", timeout_seconds=0, project="")).failures
    assert {f.property for f in failures} == {"tag", "timeout_seconds", "project"}


def test_diff_replaces_on_a_new_image_and_changes_polling_in_place() -> None:
    provider = ImageBuildProvider()
    old = {**props(), "digest": "sha256:1", "image_ref": "x", "__provider": "serialized-1"}
    same = {**props(), "__provider": "serialized-2"}
    assert provider.diff("id", old, same).changes is False
    assert provider.diff("id", old, props(poll_interval_seconds=5)).replaces == []
    assert provider.diff("id", old, props(poll_interval_seconds=5)).changes is True
    assert provider.diff("id", old, props(tag="ffffffffffffffff")).replaces == ["tag"]
    assert provider.diff("id", old, props(service_account=Unknown())).replaces == ["service_account"]


def test_update_returns_complete_outputs() -> None:
    olds = {
        **props(),
        "digest": "sha256:1",
        "image_ref": f"{IMAGE}@sha256:1",
        "build_name": "b",
        "log_url": "u",
    }
    outs = ImageBuildProvider().update("id", olds, props(poll_interval_seconds=5.0)).outs
    assert outs["digest"] == "sha256:1" and outs["image_ref"] == f"{IMAGE}@sha256:1"
    assert outs["poll_interval_seconds"] == 5.0


def test_the_serialized_provider_loads_in_a_fresh_process() -> None:
    """Pickled by reference: the host process imports infra.cloudbuild.provider, it gets no clients."""
    blob = serialize_provider(ImageBuildProvider())
    code = (
        "import sys, dill, base64; "
        "p = dill.loads(base64.b64decode(sys.argv[1])); "
        "print(type(p).__module__ + '.' + type(p).__name__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, blob],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "infra.cloudbuild.provider.ImageBuildProvider"
    assert len(blob) < 2000, "the provider is pickled by reference, not by value"


def test_without_the_emulator_clients_use_google_endpoints_and_regional_routing(
    fake_cloudbuild: FakeCloudBuild, monkeypatch: pytest.MonkeyPatch
) -> None:
    """builds.create is served by cloudbuild.googleapis.com; the regional parent routes it (location)."""
    ImageBuildProvider().create(props())
    create = fake_cloudbuild.methods().index("CreateBuild")
    assert "location=us-central1" in fake_cloudbuild.metadata[create]["x-goog-request-params"]
    assert fake_cloudbuild.calls[create][1].parent == PARENT

    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST")
    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "my-proj"))
    api = BuildApi(spec.with_defaults(props()))
    assert api.builds.transport._host == "cloudbuild.googleapis.com:443"
    assert api.registry.transport._host == "artifactregistry.googleapis.com:443"
    assert api.logging.transport._host == "logging.googleapis.com:443"


def test_the_fake_shares_a_port_with_the_vertex_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    """One VERTEX_AI_EMULATOR_HOST serves JobService and Cloud Build, as a whole-stack run would use it."""
    from tests.fakes.vertex import FakeJobService

    builds, jobs = FakeCloudBuild(), FakeJobService()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(*builds.handlers()))
    try:
        result = ImageBuildProvider().create(props())
    finally:
        jobs.stop()
    assert result.outs["digest"] == next(iter(builds.builds.values())).results.images[0].digest


def test_state_from_before_the_generation_pin_updates_in_place() -> None:
    """An image built before the pin is neither rebuilt nor updated for it; a re-upload of the same context
    (a new generation) is no new image either: only the build that reads the context uses its generation."""
    provider = ImageBuildProvider()
    old = {k: v for k, v in props().items() if k != "source_generation"}
    assert provider.diff("id", old, props()).changes is False
    assert provider.diff("id", props(), props(source_generation=1764000000999999.0)).changes is False
    assert provider.diff("id", props(), props(tag="other")).replaces == ["tag"]


def test_a_build_past_its_deadline_is_cancelled_through_cancel_build(
    fake_cloudbuild: FakeCloudBuild, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel path against the fake like the other build calls: CancelBuild names the build as
    googleapis' CancelBuildRequest asks (project_id, id, the regional name); the build ends CANCELLED."""
    from infra.cloudbuild import provider as build_provider

    monkeypatch.setattr(build_provider, "QUEUE_GRACE_SECONDS", 0.0)
    stuck = fake_cloudbuild.add_build(PARENT, spec.build_request(spec.with_defaults(props())), Status.WORKING)

    with pytest.raises(BuildError, match=r"ran past timeout_seconds=0.2 .* was cancelled \(now CANCELLED\)"):
        ImageBuildProvider().create(props(timeout_seconds=0.2))

    (request,) = [r for name, r in fake_cloudbuild.calls if name == "CancelBuild"]
    assert (request.name, request.project_id, request.id) == (stuck, "my-proj", stuck.rsplit("/", 1)[-1])
    assert fake_cloudbuild.builds[stuck].status == Status.CANCELLED
    assert "CreateBuild" not in fake_cloudbuild.methods()  # the running build was adopted, then cancelled


def test_cancelling_a_build_that_already_ended_is_not_an_error(fake_cloudbuild: FakeCloudBuild) -> None:
    done = fake_cloudbuild.add_build(PARENT, spec.build_request(spec.with_defaults(props())), Status.WORKING)
    fake_cloudbuild.finish(done, Status.SUCCESS)
    api = BuildApi(spec.with_defaults(props()))
    api.cancel(done)  # FAILED_PRECONDITION from the service: nothing to stop
    api.cancel(f"{PARENT}/builds/no-such-build")  # NOT_FOUND: nothing to stop
    assert fake_cloudbuild.methods().count("CancelBuild") == 2


def test_a_build_refused_for_the_builders_new_grants_is_submitted_again(
    fake_cloudbuild: FakeCloudBuild, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The builder's bucket grant, made by this `up`, is not applied to the first two builds yet.
    monkeypatch.setattr(propagation, "DELAYS", (0.01, 0.02, 0.03))
    fake_cloudbuild.source_refusals = 2
    outs = ImageBuildProvider().create(props()).outs
    assert len(created_builds(fake_cloudbuild)) == 3 and outs["digest"].startswith("sha256:")
    lines = [line for line in capsys.readouterr().err.splitlines() if "waiting for" in line]
    assert len(lines) == 2  # one line per retry, saying what is waited for
    assert "waiting for the builder's new grants" in lines[0] and "retry 1 in 0s" in lines[0]
    assert "does not have storage.objects.get access" in lines[0]
    assert propagation.PROPAGATION_URL in lines[1] and "retry 2" in lines[1]


def test_a_build_refused_past_the_worst_case_fails_with_its_reason(
    fake_cloudbuild: FakeCloudBuild, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(propagation, "DELAYS", (0.01,))
    fake_cloudbuild.source_refusals = 5
    with pytest.raises(BuildError, match=r"storage\.objects\.get"):
        ImageBuildProvider().create(props())
    assert len(created_builds(fake_cloudbuild)) == 2  # the first, and one retry within the bound


def test_a_build_failing_in_a_step_is_not_retried(fake_cloudbuild: FakeCloudBuild) -> None:
    fake_cloudbuild.outcome = Status.FAILURE
    with pytest.raises(BuildError):
        ImageBuildProvider().create(props())
    assert len(created_builds(fake_cloudbuild)) == 1


BASE = "tensorflow/tensorflow:2.21.0-gpu"


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_a_build_records_its_builder_and_base_images_by_digest(fake_cloudbuild: FakeCloudBuild) -> None:
    """The resolve step pulls each FROM image and writes `<ref>@<digest>` to $BUILDER_OUTPUT/output (run here
    with /bin/sh against the fake's `docker`); Results.build_step_images names the builder that ran."""
    result = ImageBuildProvider().create(props(base_images=[BASE, "python:3.12-slim"]))

    [request] = created_builds(fake_cloudbuild)
    resolve, build = request.steps
    assert (resolve.id, resolve.name, list(resolve.args), resolve.entrypoint) == (
        spec.RESOLVE_STEP_ID,
        spec.DOCKER_BUILDER,
        [],
        "",
    ), "a script step takes no entrypoint or args (BuildStep.script)"
    assert build.args[:3] == ["build", "--file", "Dockerfile"]
    assert result.outs["resolved_base_images"] == [
        f"{BASE}@{_sha(BASE)}",
        f"python:3.12-slim@{_sha('python:3.12-slim')}",
    ]
    assert result.outs["builder_image"] == f"{spec.DOCKER_BUILDER}@{_sha(spec.DOCKER_BUILDER)}"
    read = ImageBuildProvider().read(result.id, {**props(base_images=[BASE]), **result.outs})
    assert read.outs["resolved_base_images"] == result.outs["resolved_base_images"]
    assert read.outs["builder_image"] == result.outs["builder_image"]


def test_without_base_images_the_request_is_the_docker_build_alone(fake_cloudbuild: FakeCloudBuild) -> None:
    result = ImageBuildProvider().create(props())
    [request] = created_builds(fake_cloudbuild)
    assert [step.id for step in request.steps] == [""]
    assert result.outs["resolved_base_images"] == []
    assert result.outs["builder_image"] == f"{spec.DOCKER_BUILDER}@{_sha(spec.DOCKER_BUILDER)}"


def test_an_image_found_in_the_registry_records_no_build() -> None:
    built = cloudbuild_v1.Build(steps=[cloudbuild_v1.BuildStep(name=spec.DOCKER_BUILDER)])
    assert spec.builder_image(built) == "" and spec.resolved_base_images(built) == []


def test_the_resolve_script_quotes_each_reference_and_check_refuses_others() -> None:
    script = spec.resolve_script([BASE, "gcr.io/p/i@sha256:" + "a" * 64])
    assert f"for ref in {BASE} gcr.io/p/i@sha256:{'a' * 64}; do" in script
    assert "'x y'" in spec.resolve_script(["x y"])
    failures = ImageBuildProvider().check({}, props(base_images=["ok:1", "$(id)", "a b"])).failures
    assert [f.property for f in failures] == ["base_images"] and "$(id)" in failures[0].reason


def test_base_images_change_in_place_and_state_without_them_keeps_its_image() -> None:
    provider = ImageBuildProvider()
    assert provider.diff("id", props(), props(base_images=[])).changes is False
    changed = provider.diff("id", props(), props(base_images=[BASE]))
    assert changed.changes is True and changed.replaces == []
