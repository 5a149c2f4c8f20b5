"""ModelVersionProvider against a fake ModelService, through the real ModelServiceClient."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from pulumi.output import Unknown

from infra.dynamic.errors import ProviderError
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.model.registry import ModelError
from infra.vertex.model_provider import ModelVersionProvider
from serving import model_files, settings
from tests.fakes.model_service import FakeModelService
from tests.fakes.storage import FakeStorage

PROJECT, REGION = "demo-project", "europe-west4"
PARENT = f"projects/{PROJECT}/locations/{REGION}/models/vertex-training-prod"
SERVING_IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/vertex-training-prod/serving@sha256:" + "5" * 64
MODEL_DIRS = ("gs://demo-bucket/runs/abc/model/", "gs://demo-bucket/runs/def/model/")


def props(**overrides: object) -> dict:
    return {
        "project": PROJECT,
        "region": REGION,
        "model_id": "vertex-training-prod",
        "display_name": "vertex-training-prod",
        "artifact_uri": MODEL_DIRS[0],
        "serving_image": SERVING_IMAGE,
        "labels": {"pulumi_stack": "prod"},
        "version_aliases": ["candidate"],
        "service_account": f"trainer@{PROJECT}.iam.gserviceaccount.com",
        **overrides,
    }


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, fake_storage: FakeStorage) -> Iterator[FakeModelService]:
    """The ModelService, and Cloud Storage holding what the trainer exports into both model dirs."""
    for model_dir in MODEL_DIRS:
        for name in model_files.REQUIRED_FILES:
            fake_storage.put(model_dir + name, b"exported")
    service = FakeModelService()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", service.start())
    yield service
    service.stop()


@pytest.fixture(autouse=True)
def fast_operations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client polls a long-running operation after about a second; the fake's are done by then."""
    real_sleep = time.sleep
    monkeypatch.setattr("google.api_core.retry.retry_unary.time.sleep", lambda s: real_sleep(min(s, 0.01)))


def create(provider: ModelVersionProvider, **overrides: object):
    checked = provider.check({}, props(**overrides))
    assert checked.failures == []
    return provider.create(checked.inputs)


def test_first_upload_creates_the_parent_and_later_ones_are_its_versions(fake) -> None:
    provider = ModelVersionProvider()
    first = create(provider)
    assert first.id == f"{PARENT}@1"
    outs = first.outs
    assert outs["model_name"] == PARENT and outs["version_id"] == "1" and outs["version_name"] == first.id
    assert outs["console_url"] == (
        f"https://console.cloud.google.com/vertex-ai/models/locations/{REGION}/models/vertex-training-prod"
        f"/versions/1?project={PROJECT}"
    )
    assert outs["aliases"] == ["candidate", "default"]
    stored = fake.versions(PARENT)["1"]
    # The stack's own serving image, on the server's port and routes (serving/settings.py).
    spec = stored.container_spec
    assert spec.image_uri == SERVING_IMAGE
    assert [p.container_port for p in spec.ports] == [settings.DEFAULT_PORT] == [8080]
    assert (spec.health_route, spec.predict_route) == ("/health", "/predict")
    assert stored.artifact_uri == "gs://demo-bucket/runs/abc/model/"
    assert stored.labels["pulumi_stack"] == "prod" and stored.labels[KEY_LABEL]
    (upload,) = [r for m, r in fake.calls if m == "UploadModel"]
    assert upload.model_id == "vertex-training-prod" and not upload.parent_model
    assert upload.service_account == f"trainer@{PROJECT}.iam.gserviceaccount.com"

    second = create(provider, artifact_uri="gs://demo-bucket/runs/def/model/")
    assert second.id == f"{PARENT}@2"
    later = [r for m, r in fake.calls if m == "UploadModel"][1]
    assert later.parent_model == PARENT and not later.model_id
    # `default` and `candidate` follow the newest version.
    assert fake.aliases(PARENT) == {"1": [], "2": ["candidate", "default"]}
    assert provider.read(first.id, first.outs).outs["aliases"] == []  # read refreshes
    assert "GetOperation" in fake.operations.methods()  # uploads are long-running operations, awaited


def test_an_interrupted_create_is_adopted_not_uploaded_twice(fake) -> None:
    provider = ModelVersionProvider()
    first = create(provider)
    again = create(provider)  # same inputs: the engine lost the first create's response
    assert again.id == first.id and again.outs["version_id"] == "1"
    assert fake.methods().count("UploadModel") == 1 and list(fake.versions(PARENT)) == ["1"]


def test_a_create_interrupted_before_its_aliases_is_finished_by_the_next(fake) -> None:
    provider = ModelVersionProvider()
    create(provider)
    fake.fail("MergeVersionAliases", grpc.StatusCode.PERMISSION_DENIED)
    with pytest.raises(ModelError, match="denied"):
        create(provider, artifact_uri="gs://demo-bucket/runs/def/model/")
    assert fake.aliases(PARENT) == {"1": ["candidate"], "2": ["default"]}  # uploaded; `candidate` not moved
    again = create(provider, artifact_uri="gs://demo-bucket/runs/def/model/")
    assert again.id == f"{PARENT}@2" and again.outs["aliases"] == ["candidate", "default"]
    assert fake.aliases(PARENT) == {"1": [], "2": ["candidate", "default"]}
    assert fake.methods().count("UploadModel") == 2


def test_a_lost_upload_response_is_not_retried_into_a_second_version(fake, monkeypatch) -> None:
    monkeypatch.setattr("infra.dynamic.retries.time.sleep", lambda _s: None)
    fake.fail("UploadModel", grpc.StatusCode.UNAVAILABLE, applied=True)
    provider = ModelVersionProvider()
    created = create(provider)
    assert created.id == f"{PARENT}@1" and fake.methods().count("UploadModel") == 1
    fake.fail("GetModel", grpc.StatusCode.DEADLINE_EXCEEDED, times=2)
    assert provider.read(created.id, created.outs).id == created.id  # transient errors are retried


def test_delete_removes_only_its_version_and_default_moves_back(fake) -> None:
    provider = ModelVersionProvider()
    old = create(provider)
    new = create(provider, artifact_uri="gs://demo-bucket/runs/def/model/")
    provider.delete(new.id, new.outs)
    assert list(fake.versions(PARENT)) == ["1"]
    assert fake.aliases(PARENT)["1"] == ["default"]  # Vertex moves `default` to the newest left
    assert fake.methods().count("DeleteModelVersion") == 1 and "DeleteModel" not in fake.methods()
    assert provider.read(new.id, new.outs).id == ""  # gone
    assert provider.read(old.id, old.outs).id == old.id
    # The last version cannot be deleted as a version: the (now empty) parent model goes with it.
    provider.delete(old.id, old.outs)
    assert fake.models == {} and fake.methods().count("DeleteModel") == 1
    provider.delete(old.id, old.outs)  # already gone: done


def test_a_deployed_version_is_kept_with_an_actionable_error(fake) -> None:
    provider = ModelVersionProvider()
    create(provider)
    new = create(provider, artifact_uri="gs://demo-bucket/runs/def/model/")
    fake.deployed.add(new.id)
    with pytest.raises(ModelError, match="undeploy it") as raised:
        provider.delete(new.id, new.outs)
    assert "gcloud ai endpoints undeploy-model" in str(raised.value)
    assert list(fake.versions(PARENT)) == ["1", "2"]


def test_diff_replaces_on_any_input_change_creating_first() -> None:
    provider = ModelVersionProvider()
    olds = provider.check({}, props()).inputs
    assert provider.diff("id", olds, props()).changes is False
    diff = provider.diff("id", olds, props(artifact_uri=Unknown()))
    assert diff.changes and diff.replaces == ["artifact_uri"] and diff.delete_before_replace is False
    # A new serving image (a server change, no retraining) uploads a new version of the same model dir.
    served = provider.diff("id", olds, props(serving_image=SERVING_IMAGE.replace("5" * 64, "6" * 64)))
    assert served.replaces == ["serving_image"] and served.delete_before_replace is False


def test_check_passes_unknowns_and_names_bad_inputs() -> None:
    provider = ModelVersionProvider()
    assert provider.check({}, props(artifact_uri=Unknown(), service_account=Unknown())).failures == []
    failures = provider.check(
        {}, props(model_id="9lives", artifact_uri="/tmp/model", version_aliases=["Bad"], labels={"A": "b"})
    ).failures
    assert sorted(f.property for f in failures) == ["artifact_uri", "labels", "model_id", "version_aliases"]
    missing = provider.check({}, {k: v for k, v in props().items() if k != "serving_image"}).failures
    assert [(f.property, f.reason) for f in missing] == [("serving_image", "serving_image is required")]


def test_a_model_dir_the_server_cannot_serve_is_refused_before_any_upload(fake) -> None:
    """A folder inside the model dir (the serving_bytes/ of an earlier trainer, say) holds no class names."""
    with pytest.raises(ProviderError) as raised:
        create(ModelVersionProvider(), artifact_uri="gs://demo-bucket/runs/abc/model/variables/")
    assert "saved_model.pb, assets/class_names.txt are missing" in str(raised.value)
    assert "model_dir output" in str(raised.value)
    assert not [m for m, _ in fake.calls if m == "UploadModel"]
