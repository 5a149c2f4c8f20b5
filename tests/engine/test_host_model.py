"""The real dynamic-provider host runs the ModelVersion provider (fake ModelService), on inputs the Python SDK
serialized: in a preview the model directory (a training job's output) is unknown, and Check must pass."""

from __future__ import annotations

import grpc
import pulumi_gcp as gcp
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.rpc import UNKNOWN

from infra.vertex.model.resource import RESOURCE_TYPE, ModelVersion, ModelVersionArgs
from serving import model_files
from tests.engine.host import plain
from tests.fakes.model_service import FakeModelService
from tests.fakes.pulumi_mocks import run_program
from tests.fakes.storage import FakeStorage

PROJECT, REGION = "demo-project", "us-central1"
MODEL_DIR = "gs://demo-bucket/runs/1/model/"
SERVING_IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/vertex-training-dev/serving@sha256:" + "5" * 64


def recorded(*, preview: bool) -> struct_pb2.Struct:
    def program() -> object:
        # Upstream outputs, unknown in a preview the way the training job's model_dir is on a first up.
        account = gcp.serviceaccount.Account("trainer", account_id="trainer", project=PROJECT)
        version = ModelVersion(
            "model",
            ModelVersionArgs(
                project=PROJECT,
                region=REGION,
                model_id="vertex-training-dev",
                display_name="vertex-training-dev",
                artifact_uri=account.email.apply(lambda _: MODEL_DIR),
                # Built by this `up`: its digest is unknown in a preview.
                serving_image=account.email.apply(lambda _: SERVING_IMAGE),
                labels={"pulumi_stack": "dev"},
                version_aliases=["candidate"],
                service_account=account.email,
            ),
        )
        return version.version_name

    return run_program(program, stack="dev", preview=preview).one(RESOURCE_TYPE).struct


def test_preview_with_an_unknown_model_dir_passes_check_then_up_and_destroy(start_host) -> None:
    fake, storage = FakeModelService(), FakeStorage()
    fake.operation_polls = 0  # the client's first operation poll waits about a second: answer done at once
    for name in model_files.REQUIRED_FILES:  # what the trainer exported
        storage.put(MODEL_DIR + name, b"exported")
    host = start_host(VERTEX_AI_EMULATOR_HOST=fake.start(), STORAGE_EMULATOR_HOST=storage.start())
    try:
        preview = recorded(preview=True)
        assert plain(preview)["artifact_uri"] == UNKNOWN
        checked = host.check(preview)
        assert list(checked.failures) == []
        assert plain(checked.inputs)["artifact_uri"] == UNKNOWN
        assert plain(checked.inputs)["serving_image"] == UNKNOWN

        inputs = host.check(recorded(preview=False)).inputs
        created = host.create(inputs)
        parent = f"projects/{PROJECT}/locations/{REGION}/models/vertex-training-dev"
        assert created.id == f"{parent}@1"
        assert plain(created.properties)["artifact_uri"] == MODEL_DIR
        assert fake.versions(parent)["1"].artifact_uri == MODEL_DIR
        assert fake.versions(parent)["1"].container_spec.image_uri == SERVING_IMAGE
        # A version serving on an endpoint is kept; the error reaches the CLI as one paragraph.
        fake.deployed.add(created.id)
        with pytest.raises(grpc.RpcError) as raised:
            host.delete(created.id, created.properties)
        details = raised.value.details().strip()
        assert details.startswith("infra.vertex.model.registry.ModelError: ") and "undeploy it" in details
        assert "\n" not in details and "Traceback" not in details
        fake.deployed.clear()
        host.delete(created.id, created.properties)
        assert fake.models == {}
    finally:
        fake.stop()
        storage.stop()


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
def test_the_prod_programs_model_version_passes_check_in_the_host(checking_host, preview: bool) -> None:
    from infra.stack import build
    from tests.stack.conftest import stack_config

    cfg = stack_config("prod")
    run = run_program(lambda: build(cfg), stack="prod", preview=preview)
    sent = run.one(RESOURCE_TYPE).struct
    # A first preview: the training job has not run, so its model directory is unknown.
    assert (plain(sent)["artifact_uri"] == UNKNOWN) is preview
    checked = checking_host.check(sent)
    assert [(f.property, f.reason) for f in checked.failures] == []
