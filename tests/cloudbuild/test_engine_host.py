"""ImageBuildProvider inside the real dynamic-provider host (`python -m pulumi.dynamic`), driven over gRPC.

Inputs are serialized by the SDK's own `rpc.serialize_properties` (preview unknowns become the wire sentinel,
which the host's Check and Diff turn into `pulumi.output.Unknown`); the host reaches the fake Cloud Build
through VERTEX_AI_EMULATOR_HOST inherited from its environment, as a Pulumi CLI run would hand it over.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.output import Unknown
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from infra.cloudbuild.provider import ImageBuildProvider
from infra.cloudbuild.resource import RESOURCE_TYPE
from tests.cloudbuild.test_provider import Status, props
from tests.fakes.cloudbuild import FakeCloudBuild

ROOT = Path(__file__).resolve().parents[2]
URN = f"urn:pulumi:dev::vertex-training::vertex-training:cloudbuild:CloudBuildImage${RESOURCE_TYPE}::image"


def wire(values: dict[str, Any]) -> struct_pb2.Struct:
    # A private loop, as the host uses: asyncio.run would unset the main thread's loop that mocked runs use.
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(values, {}))
    finally:
        loop.close()


@pytest.fixture
def host(fake_cloudbuild: FakeCloudBuild) -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "pulumi.dynamic"],
        cwd=ROOT,
        env={**os.environ, "PULUMI_RUNTIME_VIRTUALENV": ".venv"},
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        port = int(process.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield provider_pb2_grpc.ResourceProviderStub(channel)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def test_check_create_and_diff_through_the_host(
    host: provider_pb2_grpc.ResourceProviderStub, fake_cloudbuild: FakeCloudBuild
) -> None:
    provider = serialize_provider(ImageBuildProvider())
    preview = {**props(service_account=Unknown(), source_object=Unknown()), "__provider": provider}
    checked = host.Check(provider_pb2.CheckRequest(urn=URN, olds=wire({}), news=wire(preview)), timeout=60)
    assert list(checked.failures) == []
    assert checked.inputs["service_account"] == rpc.UNKNOWN, "the unknown goes back to the engine as unknown"

    inputs = {**props(), "__provider": provider}
    created = host.Create(
        provider_pb2.CreateRequest(urn=URN, properties=wire(inputs), timeout=60), timeout=120
    )
    outputs = rpc.deserialize_properties(created.properties)
    [build] = fake_cloudbuild.builds.values()
    assert created.id.endswith(":0123456789abcdef")
    assert outputs["digest"] == build.results.images[0].digest and outputs["build_name"] == build.name

    same = host.Diff(
        provider_pb2.DiffRequest(id=created.id, urn=URN, olds=created.properties, news=wire(inputs))
    )
    assert same.changes == provider_pb2.DiffResponse.DIFF_NONE
    unknown_tag = {**inputs, "tag": Unknown()}
    replaced = host.Diff(
        provider_pb2.DiffRequest(id=created.id, urn=URN, olds=created.properties, news=wire(unknown_tag))
    )
    assert replaced.changes == provider_pb2.DiffResponse.DIFF_SOME and list(replaced.replaces) == ["tag"]


def test_a_failed_build_reaches_the_engine_with_its_log(
    host: provider_pb2_grpc.ResourceProviderStub, fake_cloudbuild: FakeCloudBuild
) -> None:
    fake_cloudbuild.outcome = Status.FAILURE
    fake_cloudbuild.failure_log = ["ERROR: No matching distribution found for tensorflw"]
    inputs = {**props(), "__provider": serialize_provider(ImageBuildProvider())}
    with pytest.raises(grpc.RpcError) as caught:
        host.Create(provider_pb2.CreateRequest(urn=URN, properties=wire(inputs)), timeout=120)
    details = caught.value.details()
    assert "BuildError" in details and "ended FAILURE" in details
    assert "No matching distribution found for tensorflw" in details and "console.cloud.google.com" in details
    # One paragraph for the user: the provider's configure() drops the host's traceback frames.
    assert "Traceback" not in details and 'File "' not in details
