"""A fake Vertex AI ModelService (Model Registry versions) served over real gRPC on localhost.

Requests and responses are the library's own proto-plus types, so the real `ModelServiceClient` drives it
through `VERTEX_AI_EMULATOR_HOST`. As the service documents it (aiplatform v1 model_service.proto and the
Model Registry pages, read 2026-11-22): UploadModel and the deletes are long-running operations, done after
`operation_polls` GetOperation calls; the first version of a model gets the `default` alias, an alias lives on
one version at a time, and deleting the default version moves `default` to the newest remaining one;
DeleteModelVersion refuses the only version (DeleteModel is for that) and a version deployed to an endpoint.
An upload carrying `default` moves it (as the SDK's is_default_version relies on); the documentation says
nothing of moving another alias by upload or MergeVersionAliases, so the fake refuses one held by another
version (the strict reading: `-alias` on the holder first), and refuses `-default` (one default per model).
"""

from __future__ import annotations

import datetime
import itertools
import re

import grpc
from google.cloud import aiplatform_v1
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from tests.fakes import filters
from tests.fakes.grpc_fake import Abort, FakeService
from tests.fakes.operations import Operations

SERVICE = "google.cloud.aiplatform.v1.ModelService"
DEFAULT = "default"
_LOCATION = re.compile(r"projects/[^/]+/locations/[^/]+")
_MODEL = re.compile(r"(projects/[^/]+/locations/[^/]+/models/[^/@]+)(?:@(.+))?")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class FakeModelService(FakeService):
    """In-memory models (name -> version id -> Model); `deployed` holds version names serving on endpoints."""

    def __init__(self, operations: Operations | None = None) -> None:
        super().__init__()
        self.models: dict[str, dict[str, aiplatform_v1.Model]] = {}
        self.deployed: set[str] = set()
        # GetOperation calls an operation needs before it is done (Vertex returns upload not done).
        self.operation_polls = 1
        # Shared with the fakes served beside this one (one GetOperation handler per port).
        self.operations = operations or Operations()
        self._ids = itertools.count(5000)

    def handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        return (self.handler(), self.operations.handler())

    def handler(self) -> grpc.GenericRpcHandler:
        op = operations_pb2.Operation.SerializeToString
        return self._service(
            SERVICE,
            {
                "UploadModel": (self._upload, aiplatform_v1.UploadModelRequest, op),
                "GetModel": (self._get, aiplatform_v1.GetModelRequest, aiplatform_v1.Model.serialize),
                "ListModelVersions": (
                    self._list_versions,
                    aiplatform_v1.ListModelVersionsRequest,
                    aiplatform_v1.ListModelVersionsResponse.serialize,
                ),
                "DeleteModelVersion": (self._delete_version, aiplatform_v1.DeleteModelVersionRequest, op),
                "DeleteModel": (self._delete_model, aiplatform_v1.DeleteModelRequest, op),
                "MergeVersionAliases": (
                    self._merge_aliases,
                    aiplatform_v1.MergeVersionAliasesRequest,
                    aiplatform_v1.Model.serialize,
                ),
            },
        )

    # --- control -------------------------------------------------------------------------------------
    def versions(self, model: str) -> dict[str, aiplatform_v1.Model]:
        return self.models.get(model, {})

    def add_version(self, location: str, model_id: str) -> str:
        """A new version of `location`/models/`model_id` as an upload makes it (done at once); its name."""
        model = f"{location}/models/{model_id}"
        saved, self.operation_polls = self.operation_polls, 0
        try:
            self._upload(
                aiplatform_v1.UploadModelRequest(
                    parent=location,
                    model_id=model_id,
                    parent_model=model if model in self.models else "",
                    model=aiplatform_v1.Model(display_name=model_id, artifact_uri="gs://bucket/model/"),
                )
            )
        finally:
            self.operation_polls = saved
        return f"{model}@{max(self.models[model], key=int)}"

    def aliases(self, model: str) -> dict[str, list[str]]:
        """version id -> aliases, for assertions."""
        return {vid: sorted(v.version_aliases) for vid, v in self.versions(model).items()}

    # --- plumbing ------------------------------------------------------------------------------------
    def _operation(self, resource: str, metadata: object, response: object) -> operations_pb2.Operation:
        return self.operations.start_operation(resource, metadata, response, self.operation_polls)

    def _lookup(self, name: str) -> tuple[str, str, aiplatform_v1.Model]:
        """(model name, version id, version) for `model`, `model@version_id` or `model@alias`."""
        match = _MODEL.fullmatch(name)
        versions = self.models.get(match.group(1), {}) if match else {}
        ref = (match.group(2) if match else None) or DEFAULT
        for vid, version in versions.items():
            if ref == vid or ref in version.version_aliases:
                return match.group(1), vid, version
        raise Abort(grpc.StatusCode.NOT_FOUND, f'The Model "{name}" does not exist.')

    @staticmethod
    def _set_aliases(version: aiplatform_v1.Model, aliases: list[str]) -> None:
        del version.version_aliases[:]
        version.version_aliases.extend(dict.fromkeys(aliases))

    @staticmethod
    def _refuse_taken(versions: dict[str, aiplatform_v1.Model], vid: str, aliases: list[str]) -> None:
        for other_id, other in versions.items():
            taken = sorted(set(aliases) & set(other.version_aliases) - {DEFAULT})
            if other_id != vid and taken:
                raise Abort(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"Alias {taken[0]} is already used by version {other_id}.",
                )

    # --- methods -------------------------------------------------------------------------------------
    def _upload(self, request: aiplatform_v1.UploadModelRequest) -> operations_pb2.Operation:
        if not _LOCATION.fullmatch(request.parent):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid parent: {request.parent}")
        if not request.model.artifact_uri.startswith("gs://"):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "artifact_uri must be a Cloud Storage URI")
        if request.parent_model:
            model = request.parent_model
            if model not in self.models:
                raise Abort(grpc.StatusCode.NOT_FOUND, f'The Model "{model}" does not exist.')
        else:
            model = f"{request.parent}/models/{request.model_id or next(self._ids)}"
            if model in self.models:
                raise Abort(grpc.StatusCode.ALREADY_EXISTS, f"Model {model} already exists.")
            self.models[model] = {}
        versions = self.models[model]
        vid = str(max((int(v) for v in versions), default=0) + 1)
        stored = aiplatform_v1.Model(request.model)
        stored.name, stored.version_id = model, vid
        stored.create_time = stored.version_create_time = stored.version_update_time = _now()
        aliases = list(stored.version_aliases) + ([DEFAULT] if not versions else [])
        self._refuse_taken(versions, vid, aliases)
        if DEFAULT in aliases:
            for version in versions.values():
                self._set_aliases(version, [a for a in version.version_aliases if a != DEFAULT])
        self._set_aliases(stored, aliases)
        versions[vid] = stored
        metadata = aiplatform_v1.UploadModelOperationMetadata(
            generic_metadata=aiplatform_v1.GenericOperationMetadata(create_time=_now())
        )
        response = aiplatform_v1.UploadModelResponse(model=model, model_version_id=vid)
        return self._operation(model, metadata, response)

    def _get(self, request: aiplatform_v1.GetModelRequest) -> aiplatform_v1.Model:
        return aiplatform_v1.Model(self._lookup(request.name)[2])

    def _list_versions(
        self, request: aiplatform_v1.ListModelVersionsRequest
    ) -> aiplatform_v1.ListModelVersionsResponse:
        if request.name not in self.models:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The Model "{request.name}" does not exist.')
        matches = filters.labels_filter(request.filter) if request.filter else (lambda _m: True)
        found = [aiplatform_v1.Model(v) for v in self.models[request.name].values() if matches(v)]
        return aiplatform_v1.ListModelVersionsResponse(models=found)

    def _delete_version(self, request: aiplatform_v1.DeleteModelVersionRequest) -> operations_pb2.Operation:
        if "@" not in request.name:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "The name must include a version ID.")
        model, vid, version = self._lookup(request.name)
        versions = self.models[model]
        if len(versions) == 1:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "Deleting the only version in the Model is not allowed. Use DeleteModel instead.",
            )
        if f"{model}@{vid}" in self.deployed:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"Model version {model}@{vid} has DeployedModel(s); undeploy it from its endpoints first.",
            )
        del versions[vid]
        if DEFAULT in version.version_aliases:
            newest = max(versions.values(), key=lambda v: v.version_create_time)
            newest.version_aliases.append(DEFAULT)
        metadata = aiplatform_v1.DeleteOperationMetadata()
        return self._operation(f"{model}@{vid}", metadata, empty_pb2.Empty())

    def _merge_aliases(self, request: aiplatform_v1.MergeVersionAliasesRequest) -> aiplatform_v1.Model:
        if "@" not in request.name:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "The name must include a version ID.")
        model, vid, version = self._lookup(request.name)
        removed = [a[1:] for a in request.version_aliases if a.startswith("-")]
        added = [a for a in request.version_aliases if not a.startswith("-")]
        if DEFAULT in removed:
            raise Abort(grpc.StatusCode.FAILED_PRECONDITION, "A model must keep exactly one default version.")
        self._refuse_taken(self.models[model], vid, added)
        self._set_aliases(version, [a for a in version.version_aliases if a not in removed] + added)
        return aiplatform_v1.Model(version)

    def _delete_model(self, request: aiplatform_v1.DeleteModelRequest) -> operations_pb2.Operation:
        if request.name not in self.models:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The Model "{request.name}" does not exist.')
        if any(name.startswith(request.name + "@") for name in self.deployed):
            raise Abort(grpc.StatusCode.FAILED_PRECONDITION, f"Model {request.name} has DeployedModel(s).")
        del self.models[request.name]
        return self._operation(request.name, aiplatform_v1.DeleteOperationMetadata(), empty_pb2.Empty())
