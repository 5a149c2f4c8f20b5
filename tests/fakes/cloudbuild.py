"""A fake Cloud Build (builds) and Artifact Registry (tags) over real gRPC, with a Cloud Logging fake beside.

Requests and responses are the client libraries' own proto-plus types, so the real `CloudBuildClient`,
`ArtifactRegistryClient` and `LoggingServiceV2Client` drive it through `VERTEX_AI_EMULATOR_HOST`. Behaviour
follows the API reference (https://cloud.google.com/build/docs/api/reference/rest/v1/projects.locations.builds):
CreateBuild returns a long-running Operation whose metadata is a BuildOperationMetadata carrying the QUEUED
build; a build moves QUEUED -> WORKING -> `outcome` one step per GetBuild (builds seeded with `add_build`
stay put until `finish`); a SUCCESS pushes every `images` entry (its digest in `results.images`, its tag in
the registry) and every build writes its log lines to the project's `cloudbuild` log in `logging`, a
FakeLoggingService served with the rest.
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
import os
import re
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc
from google.api import monitored_resource_pb2
from google.cloud import artifactregistry_v1
from google.cloud.devtools import cloudbuild_v1
from google.cloud.logging_v2.types import LogEntry
from google.longrunning import operations_pb2
from google.protobuf import any_pb2

from tests.fakes import filters
from tests.fakes.filters import Matcher, compare, token_pattern
from tests.fakes.grpc_fake import Abort, FakeService
from tests.fakes.logging import FakeLoggingService

Status = cloudbuild_v1.Build.Status
# `docker` inside a step: `docker pull REF` prints what the Docker CLI prints (progress, then
# `Digest: sha256:...` and `Status: ...`), with a digest made from the reference.
DOCKER_STUB = """#!/bin/sh
[ "$1" = pull ] || { echo "the fake docker knows only pull" >&2; exit 2; }
echo "${2%%:*}: Pulling from ${2%%:*}"
echo "Digest: sha256:$(printf %s "$2" | sha256sum | cut -d' ' -f1)"
echo "Status: Downloaded newer image for $2"
"""


def run_script(step: cloudbuild_v1.BuildStep) -> bytes:
    """What a step with a `script` writes to $BUILDER_OUTPUT/output, run here with /bin/sh and the stub
    `docker` first on PATH (a step without one writes nothing)."""
    if not step.script:
        return b""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        (work / "bin").mkdir()
        (work / "out").mkdir()
        docker = work / "bin" / "docker"
        docker.write_text(DOCKER_STUB)
        docker.chmod(0o755)
        env = {
            **os.environ,
            "PATH": f"{work / 'bin'}:{os.environ['PATH']}",
            "BUILDER_OUTPUT": str(work / "out"),
        }
        subprocess.run(["/bin/sh", "-c", step.script], env=env, check=True, timeout=30, capture_output=True)
        output = work / "out" / "output"
        return output.read_bytes() if output.exists() else b""


BUILD_SERVICE = "google.devtools.cloudbuild.v1.CloudBuild"
REGISTRY_SERVICE = "google.devtools.artifactregistry.v1.ArtifactRegistry"
LIVE = {Status.PENDING, Status.QUEUED, Status.WORKING}
_NEXT = {Status.PENDING: Status.QUEUED, Status.QUEUED: Status.WORKING}
_PARENT = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)$")
_BUILD_NAME = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/builds/(?P<id>[^/]+)$")
_TAG_NAME = re.compile(
    r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/repositories/(?P<repo>[^/]+)"
    r"/packages/(?P<package>[^/]+)/tags/(?P<tag>[^/]+)$"
)
# An image URI in Artifact Registry: {location}-docker.pkg.dev/{project}/{repo}/{package}:{tag}
_IMAGE = re.compile(
    r"^(?P<location>[a-z0-9-]+)-docker\.pkg\.dev/(?P<project>[^/]+)/(?P<repo>[^/]+)/(?P<package>.+):(?P<tag>[^:/]+)$"
)
# The message Cloud Build gives a build with a user-specified account and nowhere to put its logs.
LOGGING_REQUIRED = (
    "if 'build.service_account' is specified, the build must either (a) specify 'build.logs_bucket', "
    "(b) use the REGIONAL_USER_OWNED_BUCKET build.options.default_logs_bucket_behavior option, or (c) use "
    "either CLOUD_LOGGING_ONLY / NONE logging options"
)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class FakeCloudBuild(FakeService):
    """In-memory builds, registry tags and build logs; every attribute is safe to read from tests."""

    def __init__(self) -> None:
        super().__init__()
        self.builds: dict[str, cloudbuild_v1.Build] = {}
        # Artifact Registry: tag resource name -> version resource name (…/versions/sha256:…).
        self.tags: dict[str, str] = {}
        # Cloud Logging (its own fake), where CLOUD_LOGGING_ONLY builds write their lines.
        self.logging = FakeLoggingService()
        # Where created builds end after WORKING, and the log lines of a failing step.
        self.outcome: Status = Status.SUCCESS
        self.failure_log: list[str] = ["ERROR: failed to solve: process did not complete successfully"]
        # How many of the next builds cannot fetch their source: the builder's bucket grant not applied yet
        # (FailureInfo FETCH_SOURCE_FAILED, "Unable to fetch sources", with Cloud Storage's 403 wording).
        self.source_refusals = 0
        self._advancing: set[str] = set()
        self._operations = itertools.count(1)

    # --- control -------------------------------------------------------------------------------------
    def handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        """The three services' methods, to serve alone (`start`) or beside other fakes."""
        return (
            self._service(
                BUILD_SERVICE,
                {
                    "CreateBuild": (
                        self._create,
                        cloudbuild_v1.CreateBuildRequest,
                        operations_pb2.Operation.SerializeToString,
                    ),
                    "GetBuild": (self._get, cloudbuild_v1.GetBuildRequest, cloudbuild_v1.Build.serialize),
                    "ListBuilds": (
                        self._list,
                        cloudbuild_v1.ListBuildsRequest,
                        cloudbuild_v1.ListBuildsResponse.serialize,
                    ),
                    "CancelBuild": (
                        self._cancel,
                        cloudbuild_v1.CancelBuildRequest,
                        cloudbuild_v1.Build.serialize,
                    ),
                },
            ),
            self._service(
                REGISTRY_SERVICE,
                {
                    "GetTag": (
                        self._get_tag,
                        artifactregistry_v1.GetTagRequest,
                        artifactregistry_v1.Tag.serialize,
                    )
                },
            ),
            *self.logging.handlers(),
        )

    def push(self, image_uri: str, digest: str) -> None:
        """Put an image in the registry under its tag, as a push from anywhere would."""
        with self._lock:
            self._push(image_uri, digest)

    def add_build(
        self,
        parent: str,
        build: cloudbuild_v1.Build,
        status: Status = Status.WORKING,
        *,
        advance: bool = False,
    ) -> str:
        """Seed a build as if an earlier `pulumi up` had started it; it stays in `status` until `finish`
        (advance=True: it moves on to `outcome` like a created one)."""
        with self._lock:
            stored = self._store(parent, build)
            stored.status = status
            if advance:
                self._advancing.add(stored.name)
            return stored.name

    def finish(self, name: str, status: Status) -> None:
        with self._lock:
            self._enter(self.builds[name], status)

    def _store(self, parent: str, build: cloudbuild_v1.Build) -> cloudbuild_v1.Build:
        match = _PARENT.match(parent)
        stored = cloudbuild_v1.Build(build)
        stored.id = str(uuid.uuid4())
        stored.project_id = match["project"]
        stored.name = f"{parent}/builds/{stored.id}"
        stored.create_time = _now()
        stored.log_url = (
            f"https://console.cloud.google.com/cloud-build/builds;region={match['location']}/{stored.id}"
            f"?project={match['project']}"
        )
        self.builds[stored.name] = stored
        self._log(stored, [f"starting build {stored.id!r}", "FETCHSOURCE"])
        return stored

    def _log(self, build: cloudbuild_v1.Build, lines: list[str]) -> None:
        """Write `lines` as Cloud Build logs a build: resource type build, the project's cloudbuild log."""
        for line in lines:
            self.logging.write(
                build.project_id,
                LogEntry(
                    log_name=f"projects/{build.project_id}/logs/cloudbuild",
                    resource=monitored_resource_pb2.MonitoredResource(
                        type="build", labels={"build_id": build.id}
                    ),
                    text_payload=line,
                ),
            )

    def _push(self, image_uri: str, digest: str) -> None:
        m = _IMAGE.match(image_uri)
        if not m:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"{image_uri} is not an Artifact Registry image")
        repo = f"projects/{m['project']}/locations/{m['location']}/repositories/{m['repo']}"
        package = f"{repo}/packages/{m['package'].replace('/', '%2F')}"
        self.tags[f"{package}/tags/{m['tag']}"] = f"{package}/versions/{digest}"

    def _enter(self, build: cloudbuild_v1.Build, status: Status) -> None:
        build.status = status
        if status == Status.WORKING and not build.start_time:
            build.start_time = _now()
        if status in LIVE:
            return
        build.finish_time = _now()
        if status == Status.SUCCESS:
            digest = "sha256:" + hashlib.sha256(build.id.encode()).hexdigest()
            # "build step digests, in the order corresponding to build step indices", and each step's
            # $BUILDER_OUTPUT/output, first 50KB (Results, google/devtools/cloudbuild/v1/cloudbuild.proto).
            build.results.build_step_images.extend(
                "sha256:" + hashlib.sha256(step.name.encode()).hexdigest() for step in build.steps
            )
            build.results.build_step_outputs.extend(run_script(step)[:50_000] for step in build.steps)
            for uri in build.images:
                self._push(uri, digest)
                build.results.images.append(cloudbuild_v1.BuiltImage(name=uri, digest=digest))
            self._log(
                build, [*(f"Step #0: Successfully tagged {uri}" for uri in build.images), "PUSH", "DONE"]
            )
        elif status == Status.FAILURE:
            build.status_detail = 'Build step failure: build step 0 "gcr.io/cloud-builders/docker" failed'
            build.failure_info = cloudbuild_v1.Build.FailureInfo(
                type_=cloudbuild_v1.Build.FailureInfo.FailureType.USER_BUILD_STEP,
                detail='Build step failure: build step 0 "gcr.io/cloud-builders/docker" failed: '
                "step exited with non-zero status: 1",
            )
            self._log(build, [*(f"Step #0: {line}" for line in self.failure_log), "ERROR"])

    def _lookup(self, name: str) -> cloudbuild_v1.Build:
        if name not in self.builds:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'Build "{name}" not found')
        return self.builds[name]

    # --- Cloud Build ---------------------------------------------------------------------------------
    def _create(self, request: cloudbuild_v1.CreateBuildRequest) -> operations_pb2.Operation:
        match = _PARENT.match(request.parent)
        if not match or match["project"] != request.project_id:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid parent {request.parent!r}")
        build = request.build
        if not build.steps:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid build: no build steps")
        if build.service_account and not re.fullmatch(
            r"projects/[^/]+/serviceAccounts/[^/]+@[^/]+", build.service_account
        ):
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"invalid service account {build.service_account!r}"
            )
        logging = build.options.logging
        quiet = logging in (
            cloudbuild_v1.BuildOptions.LoggingMode.CLOUD_LOGGING_ONLY,
            cloudbuild_v1.BuildOptions.LoggingMode.NONE,
        )
        if build.service_account and not build.logs_bucket and not quiet:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, LOGGING_REQUIRED)
        stored = self._store(request.parent, build)
        stored.status = Status.QUEUED
        self._advancing.add(stored.name)
        metadata = any_pb2.Any()
        metadata.Pack(
            cloudbuild_v1.BuildOperationMetadata.pb(cloudbuild_v1.BuildOperationMetadata(build=stored))
        )
        return operations_pb2.Operation(
            name=f"{request.parent}/operations/{next(self._operations)}", done=False, metadata=metadata
        )

    def _get(self, request: cloudbuild_v1.GetBuildRequest) -> cloudbuild_v1.Build:
        build = self._lookup(request.name)
        if build.name in self._advancing and build.status in _NEXT:
            self._enter(build, _NEXT[build.status])
        elif build.name in self._advancing and build.status == Status.WORKING:
            if self.source_refusals:
                self.source_refusals -= 1
                self._refuse_source(build)
            else:
                self._enter(build, self.outcome)
        return cloudbuild_v1.Build(build)

    def _refuse_source(self, build: cloudbuild_v1.Build) -> None:
        build.status, build.finish_time = Status.FAILURE, _now()
        account = build.service_account.rsplit("/", 1)[-1]
        detail = (
            f"{account} does not have storage.objects.get access to the Google Cloud Storage object. "
            "Permission 'storage.objects.get' denied on resource (or it may not exist)."
        )
        build.status_detail = f"failed to fetch source: {detail}"
        build.failure_info = cloudbuild_v1.Build.FailureInfo(
            type_=cloudbuild_v1.Build.FailureInfo.FailureType.FETCH_SOURCE_FAILED, detail=detail
        )
        self._log(build, [f"ERROR: {detail}"])

    def _list(self, request: cloudbuild_v1.ListBuildsRequest) -> cloudbuild_v1.ListBuildsResponse:
        if not _PARENT.match(request.parent):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid parent {request.parent!r}")
        matches = _filter(request.filter)
        found = [
            b for b in self.builds.values() if b.name.startswith(request.parent + "/builds/") and matches(b)
        ]
        found.sort(key=lambda b: b.create_time, reverse=True)  # newest first, as the service lists them
        return cloudbuild_v1.ListBuildsResponse(builds=[cloudbuild_v1.Build(b) for b in found])

    def _cancel(self, request: cloudbuild_v1.CancelBuildRequest) -> cloudbuild_v1.Build:
        # googleapis cloudbuild.proto CancelBuildRequest: project_id and id REQUIRED; name, when given, is
        # projects/{project}/locations/{location}/builds/{build} (a regional build is found by it).
        if not request.project_id or not request.id:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "project_id and id are required")
        match = _BUILD_NAME.match(request.name)
        if not match or (match["project"], match["id"]) != (request.project_id, request.id):
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"name {request.name!r} does not name build {request.id} of project {request.project_id}",
            )
        build = self._lookup(request.name)
        if build.status not in LIVE:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION, f"build is not running (status {build.status.name})"
            )
        self._enter(build, Status.CANCELLED)
        return cloudbuild_v1.Build(build)

    # --- Artifact Registry ---------------------------------------------------------------------------
    def _get_tag(self, request: artifactregistry_v1.GetTagRequest) -> artifactregistry_v1.Tag:
        if not _TAG_NAME.match(request.name):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid tag name {request.name!r}")
        if request.name not in self.tags:
            raise Abort(grpc.StatusCode.NOT_FOUND, "Requested entity was not found.")
        return artifactregistry_v1.Tag(name=request.name, version=self.tags[request.name])


# The part of Cloud Build's list filter used here: tags="x", status="X", build_id="x".
_TOKENS = token_pattern(r"[A-Za-z_]\w*", ("=",))
_READERS: dict[str, Callable[[cloudbuild_v1.Build], object]] = {
    "status": lambda b: b.status.name,
    "build_id": lambda b: b.id,
}


def _filter(text: str) -> Matcher:
    return filters.parse_filter(text, _TOKENS, _comparison) if text else (lambda _build: True)


def _comparison(field: str, op: str, value: str) -> Matcher:
    if field == "tags":
        return lambda build: value in build.tags
    if field in _READERS:
        return compare(_READERS[field], op, value)
    raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid filter field {field!r}")
