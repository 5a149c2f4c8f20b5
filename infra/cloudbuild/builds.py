"""Cloud Build, Artifact Registry and Cloud Logging calls for one image build (regional, or the emulator).

Endpoints: builds.create is served by cloudbuild.googleapis.com under the regional parent
projects/{p}/locations/{region}; the client routes by that location (its `location` routing header).
Google's `{region}.rep.googleapis.com` endpoints exist for data residency in a few regions only
(https://cloud.google.com/build/docs/locations, https://cloud.google.com/build/docs/api/reference/rest/v1/
projects.locations.builds/create). Artifact Registry and Cloud Logging likewise take regional resource names
on their global endpoints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from google.api_core import exceptions as gexc
from google.cloud import artifactregistry_v1
from google.cloud.artifactregistry_v1.services.artifact_registry.transports import (
    ArtifactRegistryGrpcTransport,
)
from google.cloud.devtools import cloudbuild_v1
from google.cloud.devtools.cloudbuild_v1.services.cloud_build.transports import CloudBuildGrpcTransport
from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
from google.cloud.logging_v2.services.logging_service_v2.transports import LoggingServiceV2GrpcTransport
from google.cloud.logging_v2.types import ListLogEntriesRequest

from infra.cloudbuild import spec
from infra.cloudbuild.errors import BuildError, explain, with_retry
from infra.dynamic.endpoints import client_kwargs

T = TypeVar("T")

# Deadline of each API call: a hung connection then surfaces as DEADLINE_EXCEEDED, which is retried.
CALL_TIMEOUT_SECONDS = 60.0
LOG_TAIL_LINES = 40
FIRST_RETRY_DELAY_SECONDS = 1.0


class BuildApi:
    """The calls one image build needs; clients are made on first use (never pickled with the provider)."""

    def __init__(self, props: Mapping[str, Any]) -> None:
        self.props = props
        self.project = props["project"]
        self.parent = spec.parent(props)
        self.first_retry_delay = FIRST_RETRY_DELAY_SECONDS
        self._builds: cloudbuild_v1.CloudBuildClient | None = None
        self._registry: artifactregistry_v1.ArtifactRegistryClient | None = None
        self._logging: LoggingServiceV2Client | None = None

    @property
    def builds(self) -> cloudbuild_v1.CloudBuildClient:
        if self._builds is None:
            kwargs = client_kwargs(CloudBuildGrpcTransport, "cloudbuild.googleapis.com")
            self._builds = cloudbuild_v1.CloudBuildClient(**kwargs)
        return self._builds

    @property
    def registry(self) -> artifactregistry_v1.ArtifactRegistryClient:
        if self._registry is None:
            kwargs = client_kwargs(ArtifactRegistryGrpcTransport, "artifactregistry.googleapis.com")
            self._registry = artifactregistry_v1.ArtifactRegistryClient(**kwargs)
        return self._registry

    @property
    def logging(self) -> LoggingServiceV2Client:
        if self._logging is None:
            kwargs = client_kwargs(LoggingServiceV2GrpcTransport, "logging.googleapis.com")
            self._logging = LoggingServiceV2Client(**kwargs)
        return self._logging

    def _call(self, what: str, call: Callable[[], T]) -> T:
        try:
            return with_retry(call, what, self.first_retry_delay)
        except gexc.GoogleAPICallError as exc:
            raise explain(exc, what, self.project) from None

    def pushed_digest(self) -> str | None:
        """The digest the registry holds under the content tag, or None when no image has that tag.

        The registry, not the build history, is asked: the repository's cleanup policy may have deleted
        an image whose build still reads SUCCESS, and an image pushed another way (imageBuilder docker)
        counts as well.
        """
        name = spec.registry_tag_name(self.props)
        try:
            tag = self._call(
                f"Looking up {name}",
                lambda: self.registry.get_tag(name=name, timeout=CALL_TIMEOUT_SECONDS, retry=None),
            )
        except BuildError as exc:
            if isinstance(exc.api_error, gexc.NotFound):
                return None
            raise
        return spec.digest_from_version(tag.version) if tag.version else None

    def _live_build(self) -> cloudbuild_v1.Build | None:
        request = cloudbuild_v1.ListBuildsRequest(
            parent=self.parent, project_id=self.project, filter=f'tags="{spec.build_tag(self.props)}"'
        )
        builds = self.builds.list_builds(request=request, timeout=CALL_TIMEOUT_SECONDS, retry=None)
        # Checked here too, in case the service ignores part of the filter.
        live = [b for b in builds if spec.build_tag(self.props) in b.tags and b.status in spec.LIVE]
        return max(live, key=lambda b: b.create_time) if live else None

    def find_live_build(self) -> cloudbuild_v1.Build | None:
        """A queued or running build of this tag (an interrupted `pulumi up` left it going)."""
        return self._call(f"Listing builds tagged {spec.build_tag(self.props)}", lambda: self._live_build())

    def create(self, build: cloudbuild_v1.Build) -> cloudbuild_v1.Build:
        """Submit the build; returns it as the long-running operation's metadata describes it."""
        submitted = False

        def submit() -> cloudbuild_v1.Build:
            # A retry may follow a create whose response was lost: adopt that build instead of a second one.
            nonlocal submitted
            if submitted:
                found = self._live_build()
                if found is not None:
                    return found
            submitted = True
            operation = self.builds.create_build(
                parent=self.parent,
                project_id=self.project,
                build=build,
                timeout=CALL_TIMEOUT_SECONDS,
                retry=None,
            )
            started = operation.metadata.build
            if not started.name:  # the regional name is documented as set; derive it from the id if it is not
                started.name = f"{self.parent}/builds/{started.id}"
            return started

        return self._call(f"Creating a Cloud Build build in {self.parent}", submit)

    def get(self, name: str) -> cloudbuild_v1.Build:
        build_id = name.rsplit("/", 1)[-1]
        return self._call(
            f"Reading {name}",
            lambda: self.builds.get_build(
                request=cloudbuild_v1.GetBuildRequest(name=name, project_id=self.project, id=build_id),
                timeout=CALL_TIMEOUT_SECONDS,
                retry=None,
            ),
        )

    def cancel(self, name: str) -> None:
        build_id = name.rsplit("/", 1)[-1]
        try:
            self._call(
                f"Cancelling {name}",
                lambda: self.builds.cancel_build(
                    request=cloudbuild_v1.CancelBuildRequest(name=name, project_id=self.project, id=build_id),
                    timeout=CALL_TIMEOUT_SECONDS,
                    retry=None,
                ),
            )
        except BuildError as exc:
            # NotFound: nothing to stop. FailedPrecondition: already finished.
            if not isinstance(exc.api_error, gexc.NotFound | gexc.FailedPrecondition):
                raise

    def log_tail(self, build: cloudbuild_v1.Build, lines: int = LOG_TAIL_LINES) -> list[str]:
        """The build's last log lines from Cloud Logging, where CLOUD_LOGGING_ONLY builds write them.

        Build logs carry resource.type="build" and resource.labels.build_id in the project's `cloudbuild`
        log (https://cloud.google.com/build/docs/securing-builds/store-view-build-logs).
        """
        request = ListLogEntriesRequest(
            resource_names=[f"projects/{self.project}"],
            filter=(
                f'logName="projects/{self.project}/logs/cloudbuild" AND resource.type="build" '
                f'AND resource.labels.build_id="{build.id}"'
            ),
            order_by="timestamp desc",
            page_size=lines,
        )
        page = self._call(
            f"Reading the log of build {build.id}",
            lambda: next(
                iter(
                    self.logging.list_log_entries(
                        request=request, timeout=CALL_TIMEOUT_SECONDS, retry=None
                    ).pages
                ),
                None,
            ),
        )
        entries = list(page.entries)[:lines] if page is not None else []
        return [entry.text_payload for entry in reversed(entries)]
