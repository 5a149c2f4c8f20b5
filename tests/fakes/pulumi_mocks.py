"""Run a Pulumi program under the mock runtime; record what it registered, with options and dependencies."""

from __future__ import annotations

import asyncio
import gc
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.settings import ROOT, SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await


@dataclass
class Registered:
    """One resource registration as the engine saw it."""

    type: str
    name: str
    urn: str
    inputs: dict[str, Any]
    parent: str
    dependencies: list[str]
    protect: bool
    retain_on_delete: bool
    custom: bool
    # The inputs exactly as the SDK serialized them (unknowns as the sentinel, secrets as secret objects).
    struct: struct_pb2.Struct = field(default_factory=struct_pb2.Struct)
    # input name -> URNs of the resources its value came from (what CrossGuard sees as property dependencies)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    ignore_changes: list[str] = field(default_factory=list)
    # The names of the error hooks bound to it (ResourceOptions.hooks on_error): what retries its operations.
    error_hooks: list[str] = field(default_factory=list)


def object_generation(name: str) -> int:
    """The generation the mocked upload of BucketObject `name` gets (GCS: a microsecond timestamp, new on
    every write of the object)."""
    return 1764000000000000 + int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)


def _computed_outputs(typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Values the real providers would compute, shaped enough for the stack's code to use."""
    project = inputs.get("project", "mock-project")
    if typ == "gcp:serviceaccount/account:Account":
        account_id = inputs.get("accountId", name)
        email = f"{account_id}@{project}.iam.gserviceaccount.com"
        return {"email": email, "member": f"serviceAccount:{email}"}
    if typ == "gcp:storage/bucket:Bucket":
        return {"url": f"gs://{inputs.get('name', name)}"}
    if typ == "gcp:storage/bucketObject:BucketObject":
        return {"generation": object_generation(name)}
    if typ == "gcp:pubsub/topic:Topic":
        return {"id": f"projects/{project}/topics/{inputs.get('name', name)}"}
    if typ.startswith("docker-build:index:Image"):
        digest = "sha256:" + hashlib.sha256(repr(sorted(inputs.items())).encode()).hexdigest()
        tags = inputs.get("tags") or [f"mock/{name}"]
        # docker-build's `ref`: "a single fully-qualified tag including the build's digest" (its API docs).
        return {"digest": digest, "ref": f"{tags[0]}@{digest}"}
    if typ == "pulumi-python:dynamic/cloudbuild:ImageBuild":
        digest = "sha256:" + hashlib.sha256(repr(sorted(inputs.items())).encode()).hexdigest()
        image = f"{inputs['region']}-docker.pkg.dev/{project}/{inputs['repository']}/{inputs['image_name']}"
        # As the provider reports a build (infra/cloudbuild/spec.py builder_image, resolved_base_images).
        made = {
            "builder_image": "gcr.io/cloud-builders/docker@sha256:" + "b" * 64,
            "resolved_base_images": [
                f"{ref}@sha256:{hashlib.sha256(ref.encode()).hexdigest()}"
                for ref in inputs.get("base_images", [])
            ],
        }
        return {"digest": digest, "image_ref": f"{image}@{digest}", **made}
    if typ == "gcp:artifactregistry/repository:Repository":
        host = f"{inputs.get('location')}-docker.pkg.dev"
        return {"registryUri": f"{host}/{project}/{inputs.get('repositoryId')}"}
    if typ == "gcp:vertex/aiTensorboard:AiTensorboard":
        return {"name": f"projects/{project}/locations/{inputs.get('region')}/tensorboards/1234"}
    if typ == "gcp:projects/iAMCustomRole:IAMCustomRole":
        return {"name": f"projects/{project}/roles/{inputs.get('roleId')}"}
    if typ == "gcp:projects/serviceIdentity:ServiceIdentity":
        email = (
            f"service-123456789012@gcp-sa-{inputs.get('service', '').split('.')[0]}.iam.gserviceaccount.com"
        )
        return {"email": email, "member": f"serviceAccount:{email}"}
    if typ == "pulumi-python:dynamic/vertex:CustomJob" and "base_output_dir" in inputs:
        # What the provider reports for a finished job (infra.vertex.custom_job.spec.model_dir): it succeeded.
        return {
            "model_dir": inputs["base_output_dir"].rstrip("/") + "/model/",
            "state": "JOB_STATE_SUCCEEDED",
            "job_name": f"projects/{project}/locations/{inputs.get('region')}/customJobs/{name}",
        }
    if typ == "gcp:cloudfunctionsv2/function:Function":
        return {"url": f"https://{inputs.get('name', name)}-mock.a.run.app"}
    return {}


class _RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self, preview: bool = False, job_ends: Mapping[str, dict[str, str]] | None = None) -> None:
        super().__init__()
        self.preview = preview
        self.job_ends = dict(job_ends or {})

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        outputs = {"name": args.name, **args.inputs}
        if self.preview:
            # As in a first preview: nothing exists yet, so whatever the provider computes stays unknown.
            return "", outputs
        outputs.update(_computed_outputs(args.typ, args.name, args.inputs))
        outputs.update(self.job_ends.get(args.name, {}))
        return outputs.get("id", f"{args.name}-id"), outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        if args.token == "gcp:organizations/getProject:getProject":
            return {"number": "123456789012", "projectId": args.args.get("projectId", "mock-project")}
        return {}


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    """The stock mock monitor drops parents, dependencies and options; tests need them."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registered: list[Registered] = []

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registered.append(
                Registered(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    inputs=rpc.deserialize_properties(request.object),
                    parent=request.parent,
                    dependencies=list(request.dependencies),
                    protect=bool(request.protect),
                    retain_on_delete=bool(request.retainOnDelete),
                    custom=bool(request.custom),
                    struct=request.object,
                    property_dependencies={
                        key: list(deps.urns) for key, deps in request.propertyDependencies.items()
                    },
                    ignore_changes=list(request.ignoreChanges),
                    error_hooks=list(request.hooks.on_error) if request.HasField("hooks") else [],
                )
            )
        return response


@dataclass
class MockedRun:
    """What a mocked program registered and what it returned (outputs resolved)."""

    resources: list[Registered] = field(default_factory=list)
    outputs: Any = None

    def by_type(self, typ: str) -> list[Registered]:
        return [r for r in self.resources if r.type == typ]

    def one(self, typ: str) -> Registered:
        found = self.by_type(typ)
        assert len(found) == 1, f"expected one {typ}, found {[r.name for r in found]}"
        return found[0]

    def named(self, name: str) -> Registered:
        found = [r for r in self.resources if r.name == name]
        assert len(found) == 1, f"expected one resource named {name}, found {len(found)}"
        return found[0]


def _mark_errors_read() -> None:
    """Reads the error of every failed future still alive (asyncio then does not report it at collection)."""
    for obj in gc.get_objects():
        if isinstance(obj, asyncio.Future) and obj.done() and not obj.cancelled():
            obj.exception()


def run_program(
    program: Callable[[], Any],
    *,
    project: str = "vertex-training",
    stack: str = "dev",
    preview: bool = False,
    job_ends: Mapping[str, dict[str, str]] | None = None,
    run: MockedRun | None = None,
) -> MockedRun:
    """Run `program` (e.g. `lambda: build(cfg)`) under fresh mocks; return registrations and outputs.

    preview=True: a first `pulumi preview`, where outputs that providers compute are unknown.
    job_ends: outputs (e.g. `state`, `error`) a named resource's provider reports instead of succeeding.
    run: the record to fill, so a test can read what was registered before the program failed.
    """
    monitor = _RecordingMonitor(_RecordingMocks(preview, job_ends))
    ROOT.set(None)  # set_mocks keeps an existing root Stack, which would carry the previous run's stack name
    pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()
    run = run if run is not None else MockedRun()

    def body() -> None:
        run.outputs = _sync_await(pulumi.Output.from_input(program()).future())

    try:
        _sync_await(run_pulumi_func(body))
    except BaseException:
        # A failed program leaves futures behind; collected later, inside another program's ast.parse, they
        # trip CPython 3.11's AST recursion check (SystemError): finalize them now. Those the raised error
        # still holds are collected after the test; their error is the one raised, so mark it read, or
        # asyncio prints each with its traceback ("Future exception was never retrieved") mid-run.
        gc.collect()
        _mark_errors_read()
        raise
    finally:
        run.resources = list(monitor.registered)
    return run
