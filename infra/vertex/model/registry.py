"""Model versions in Vertex AI's Model Registry through the ModelServiceClient (regional, or the emulator)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.model_service.transports import ModelServiceGrpcTransport

from infra.dynamic.endpoints import client_kwargs, vertex_endpoint
from infra.dynamic.errors import ProviderError
from infra.vertex.lifecycle import errors
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.status import iso

T = TypeVar("T")
CALL_TIMEOUT_SECONDS = 60.0
# How long upload and delete wait for their long-running operations.
OPERATION_WAIT_SECONDS = 900.0


class ModelError(ProviderError):
    """An upload or a deletion failed, or the API refused a request."""


@dataclass(frozen=True)
class VersionStatus:
    model_name: str  # projects/P/locations/R/models/M
    version_id: str
    aliases: list[str]
    create_time: str
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def version_name(self) -> str:
        return f"{self.model_name}@{self.version_id}"


def _status(model: aiplatform_v1.Model) -> VersionStatus:
    return VersionStatus(
        model_name=model.name,
        version_id=model.version_id,
        aliases=sorted(model.version_aliases),
        create_time=iso(model.version_create_time),
        labels=dict(model.labels),
    )


class ModelRegistry:
    """One parent model's versions, on Vertex AI's regional endpoint or `VERTEX_AI_EMULATOR_HOST`."""

    def __init__(self, project: str, region: str, parent: str, first_retry_delay: float = 1.0):
        self.project, self.region, self.parent = project, region, parent
        self.location = f"projects/{project}/locations/{region}"
        self.first_retry_delay = first_retry_delay
        self._client: aiplatform_v1.ModelServiceClient | None = None

    @property
    def client(self) -> aiplatform_v1.ModelServiceClient:
        if self._client is None:
            self._client = aiplatform_v1.ModelServiceClient(
                **client_kwargs(ModelServiceGrpcTransport, vertex_endpoint(self.region))
            )
        return self._client

    def _call(self, what: str, call: Callable[[], T]) -> T:
        try:
            return errors.with_retry(call, what, self.first_retry_delay)
        except gexc.GoogleAPICallError as exc:
            raise ModelError(explain(exc, what, self.project, self.region), exc) from None

    def _await(self, what: str, operation: Any) -> Any:
        try:
            return operation.result(timeout=OPERATION_WAIT_SECONDS)
        except (concurrent.futures.TimeoutError, gexc.RetryError):
            raise ModelError(
                f"{what}: Vertex AI accepted the request but its operation {operation.operation.name} "
                f"had not finished after {OPERATION_WAIT_SECONDS:.0f}s. Check the Model Registry in the "
                "console, then run `pulumi refresh` and `pulumi up` again."
            ) from None
        except gexc.GoogleAPICallError as exc:
            raise ModelError(explain(exc, what, self.project, self.region), exc) from None

    def get(self, version_name: str) -> VersionStatus | None:
        """The version (`model@id`), or None when it (or its model) no longer exists."""
        try:
            model = self._call(
                f"Reading {version_name}",
                lambda: self.client.get_model(name=version_name, timeout=CALL_TIMEOUT_SECONDS),
            )
        except ModelError as exc:
            if isinstance(exc.api_error, gexc.NotFound):
                return None
            raise
        return _status(model)

    def versions(self, key: str | None = None) -> list[VersionStatus]:
        """The parent's versions (those labelled `key`, if given); none when the parent does not exist."""
        request = aiplatform_v1.ListModelVersionsRequest(
            name=self.parent, filter=f'labels.{KEY_LABEL}="{key}"' if key else ""
        )

        def listed() -> list[VersionStatus]:
            try:
                pages = self.client.list_model_versions(request=request, timeout=CALL_TIMEOUT_SECONDS)
                return [_status(m) for m in pages]
            except gexc.NotFound:
                return []

        found = self._call(f"Listing the versions of {self.parent}", listed)
        # The label is checked here too, in case the service ignores part of the filter.
        return [v for v in found if key is None or v.labels.get(KEY_LABEL) == key]

    def find_by_key(self, key: str) -> VersionStatus | None:
        """The newest version uploaded with these inputs (an interrupted create), if any."""
        matches = self.versions(key)
        return max(matches, key=lambda v: int(v.version_id)) if matches else None

    def upload(self, model: aiplatform_v1.Model, model_id: str, service_account: str) -> VersionStatus:
        """Uploads `model` as a new version of the parent (creating the parent with its first version)."""
        key = model.labels[KEY_LABEL]
        submitted = False

        def submit() -> Any:
            # A retry may follow an upload whose response was lost: look for that version first.
            nonlocal submitted
            if submitted and self.find_by_key(key) is not None:
                return None
            submitted = True
            exists = bool(self.versions())
            return self.client.upload_model(
                request=aiplatform_v1.UploadModelRequest(
                    parent=self.location,
                    parent_model=self.parent if exists else "",
                    model_id="" if exists else model_id,
                    model=model,
                    service_account=service_account,
                ),
                timeout=CALL_TIMEOUT_SECONDS,
            )

        what = f"Uploading {model.artifact_uri} to {self.parent}"
        operation = self._call(what, submit)
        if operation is not None:
            response = self._await(what, operation)
            found = self.get(f"{response.model}@{response.model_version_id}")
        else:
            found = self.find_by_key(key)
        if found is None:
            raise ModelError(f"{what}: the upload finished but the new version cannot be read back; retry.")
        return found

    def move_aliases(self, version: VersionStatus, aliases: list[str]) -> VersionStatus:
        """`aliases` on `version` only: removed from the versions holding them, then added (idempotent)."""
        for other in self.versions():
            taken = [a for a in aliases if a in other.aliases and other.version_id != version.version_id]
            if taken:
                self._merge(other.version_name, [f"-{a}" for a in taken])
        missing = [a for a in aliases if a not in version.aliases]
        if missing:
            self._merge(version.version_name, missing)
        return self.get(version.version_name) or version

    def _merge(self, version_name: str, changes: list[str]) -> None:
        self._call(
            f"Setting aliases {', '.join(changes)} on {version_name}",
            lambda: self.client.merge_version_aliases(
                name=version_name, version_aliases=changes, timeout=CALL_TIMEOUT_SECONDS
            ),
        )

    def delete(self, version: VersionStatus) -> None:
        """Deletes this version only: DeleteModelVersion, or DeleteModel when it is the parent's last version
        (Vertex refuses to delete a model's only version). Gone already counts as done."""
        others = [v for v in self.versions() if v.version_id != version.version_id]
        request: Callable[..., Any]
        if others:
            what, name = f"Deleting model version {version.version_name}", version.version_name
            request = self.client.delete_model_version
        else:
            what = f"Deleting {version.model_name} (its last version, {version.version_id})"
            name, request = version.model_name, self.client.delete_model
        try:
            self._await(what, self._call(what, lambda: request(name=name, timeout=CALL_TIMEOUT_SECONDS)))
        except ModelError as exc:
            if not isinstance(exc.api_error, gexc.NotFound):
                raise


def explain(exc: gexc.GoogleAPICallError, what: str, project: str, region: str) -> str:
    """What a permanent Model Registry error means and what to do, in one paragraph."""
    message = exc.message or str(exc)
    if isinstance(exc, gexc.FailedPrecondition) and "deploy" in message.lower():
        return (
            f"{what} was refused: {message} The version still serves on an endpoint: undeploy it "
            "(`gcloud ai endpoints undeploy-model ENDPOINT --deployed-model-id ID --region "
            f"{region}`), then run `pulumi destroy` (or `up`) again."
        )
    if isinstance(exc, gexc.InvalidArgument):
        return (
            f"Vertex AI rejected the model ({what}): {message} Check that the artifact URI is the gs:// "
            "directory holding saved_model.pb and that the serving image exists in "
            f"{region}'s Artifact Registry."
        )
    if isinstance(exc, gexc.PermissionDenied):
        return (
            f"{what} was denied in project {project}: {message} The identity running Pulumi needs "
            "roles/aiplatform.user on the project and roles/iam.serviceAccountUser on the service account "
            "that reads the model directory, which needs read access to the bucket."
        )
    return str(errors.explain(exc, what, project, region).args[0])
