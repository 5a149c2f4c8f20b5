"""Image build errors, retries of transient API failures, and actionable messages for permanent ones."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from google.api_core import exceptions as gexc

from infra.cloudbuild.regions import ALWAYS_OPEN_REGIONS, LOCATIONS_URL
from infra.dynamic import retries
from infra.dynamic.errors import ProviderError
from infra.dynamic.retries import code_name

T = TypeVar("T")

# How builds.create reads in a project restricted to some regions (cloud.google.com/build/quotas).
_REGION_RESTRICTED = re.compile(r"region|quota restrictions", re.IGNORECASE)


class BuildError(ProviderError):
    """The image build failed, timed out or was cancelled; or a Google API refused a request."""


def with_retry(call: Callable[[], T], what: str, first_delay: float) -> T:
    """A Cloud Build, Artifact Registry or Cloud Logging call with retries (dynamic/retries.py)."""
    return retries.with_retry(call, what, first_delay, error=BuildError, service="The Google API")


def explain(exc: gexc.GoogleAPICallError, what: str, project: str) -> BuildError:
    """A BuildError saying what the permanent API error means and what to do about it."""
    message = exc.message or str(exc)
    if isinstance(exc, gexc.PermissionDenied):
        advice = (
            f"{what} was denied in project {project}: {message}\n"
            "The identity running Pulumi needs roles/cloudbuild.builds.editor on the project, "
            "roles/iam.serviceAccountUser on the builder service account (vt-<stack>-build) and "
            "roles/artifactregistry.reader on the repository; check those, and that the Cloud Build API "
            "(cloudbuild.googleapis.com) is enabled."
        )
    elif isinstance(exc, gexc.Unauthenticated):
        advice = (
            f"{what} was not authenticated: {message}\n"
            "Run `gcloud auth application-default login` (or give CI a workload identity) and retry."
        )
    elif isinstance(exc, gexc.InvalidArgument):
        advice = f"Cloud Build rejected the request ({what}): {message}"
    elif isinstance(exc, gexc.FailedPrecondition) and _REGION_RESTRICTED.search(message):
        # https://cloud.google.com/build/quotas, "Region restrictions for some projects".
        advice = (
            f"{what}: Cloud Build does not run builds in this region for project {project}: {message}\n"
            f"Some projects may build only in {', '.join(ALWAYS_OPEN_REGIONS)} ({LOCATIONS_URL}); "
            "use a stack region where builds run, or build on your machine with "
            "`pulumi config set vertex-training:imageBuilder docker`."
        )
    elif isinstance(exc, gexc.FailedPrecondition):
        advice = (
            f"{what} failed a precondition in project {project}: {message}\n"
            "Check that the Cloud Build API is enabled and billing is active for the project."
        )
    elif isinstance(exc, gexc.ResourceExhausted):
        advice = (
            f"{what} hit a Cloud Build quota in project {project}: {message}\n"
            "Wait for running builds to finish, or request more at "
            f"https://console.cloud.google.com/iam-admin/quotas?project={project}."
        )
    else:
        advice = f"{what} failed ({code_name(exc)}): {message}"
    return BuildError(advice, exc)
