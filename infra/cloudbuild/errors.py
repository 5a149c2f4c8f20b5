"""Image build errors, retries of transient API failures, and actionable messages for permanent ones."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

from google.api_core import exceptions as gexc

T = TypeVar("T")

TRANSIENT = (gexc.ServiceUnavailable, gexc.DeadlineExceeded)
RETRY_ATTEMPTS = 8
RETRY_CAP_SECONDS = 30.0


class BuildError(Exception):
    """The image build failed, timed out or was cancelled; or a Google API refused a request."""


def with_retry(call: Callable[[], T], what: str, first_delay: float) -> T:
    """Run `call`, retrying UNAVAILABLE / DEADLINE_EXCEEDED with exponential backoff from `first_delay`."""
    delay = first_delay
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        try:
            return call()
        except TRANSIENT as exc:
            if attempt == RETRY_ATTEMPTS:
                raise BuildError(
                    f"{what} failed {attempt} times with a transient error ({exc.grpc_status_code.name}): "
                    f"{exc.message}. The Google API may be degraded; run `pulumi up` again later."
                ) from exc
            print(f"{what}: {exc.grpc_status_code.name}, retrying in {delay:g}s", file=sys.stderr, flush=True)
            time.sleep(delay)
            delay = min(delay * 2, RETRY_CAP_SECONDS)
    raise AssertionError("unreachable")


def explain(exc: gexc.GoogleAPICallError, what: str, project: str) -> BuildError:
    """A BuildError saying what the permanent API error means and what to do about it."""
    message = exc.message or str(exc)
    if isinstance(exc, gexc.PermissionDenied):
        return BuildError(
            f"{what} was denied in project {project}: {message}\n"
            "The identity running Pulumi needs roles/cloudbuild.builds.editor on the project, "
            "roles/iam.serviceAccountUser on the builder service account (vt-<stack>-build) and "
            "roles/artifactregistry.reader on the repository; check those, and that the Cloud Build API "
            "(cloudbuild.googleapis.com) is enabled."
        )
    if isinstance(exc, gexc.Unauthenticated):
        return BuildError(
            f"{what} was not authenticated: {message}\n"
            "Run `gcloud auth application-default login` (or give CI a workload identity) and retry."
        )
    if isinstance(exc, gexc.InvalidArgument):
        return BuildError(f"Cloud Build rejected the request ({what}): {message}")
    if isinstance(exc, gexc.FailedPrecondition):
        return BuildError(
            f"{what} failed a precondition in project {project}: {message}\n"
            "Check that the Cloud Build API is enabled and billing is active for the project."
        )
    if isinstance(exc, gexc.ResourceExhausted):
        return BuildError(
            f"{what} hit a Cloud Build quota in project {project}: {message}\n"
            "Wait for running builds to finish, or request more at "
            f"https://console.cloud.google.com/iam-admin/quotas?project={project}."
        )
    return BuildError(
        f"{what} failed ({exc.grpc_status_code.name if exc.grpc_status_code else exc.code}): {message}"
    )
