"""Provider errors, retries of transient API failures, and actionable messages for permanent ones."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from google.api_core import exceptions as gexc

T = TypeVar("T")

TRANSIENT = (gexc.ServiceUnavailable, gexc.DeadlineExceeded)
RETRY_ATTEMPTS = 8
RETRY_CAP_SECONDS = 30.0
_QUOTA = re.compile(r"aiplatform\.googleapis\.com/[A-Za-z0-9_]+")


class JobError(Exception):
    """A training job failed, was cancelled, expired or overran its timeout; or the API refused a request."""


class JobGone(JobError):
    """The job being watched no longer exists (deleted outside this provider)."""


def with_retry(call: Callable[[], T], what: str, first_delay: float) -> T:
    """Run `call`, retrying UNAVAILABLE / DEADLINE_EXCEEDED with exponential backoff from `first_delay`."""
    delay = first_delay
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        try:
            return call()
        except TRANSIENT as exc:
            if attempt == RETRY_ATTEMPTS:
                raise JobError(
                    f"{what} failed {attempt} times with a transient error ({exc.grpc_status_code.name}): "
                    f"{exc.message}. Vertex AI may be degraded; run `pulumi up` again later."
                ) from exc
            print(f"{what}: {exc.grpc_status_code.name}, retrying in {delay:g}s", file=sys.stderr)
            time.sleep(delay)
            delay = min(delay * 2, RETRY_CAP_SECONDS)
    raise AssertionError("unreachable")


def explain(exc: gexc.GoogleAPICallError, what: str, project: str, region: str) -> JobError:
    """A JobError telling the user what the permanent API error means and what to do about it."""
    message = exc.message or str(exc)
    if isinstance(exc, gexc.ResourceExhausted):
        quotas = sorted(set(_QUOTA.findall(message)))
        quota = ", ".join(quotas) if quotas else "a Vertex AI custom training quota"
        hint = (
            f"{what} hit a quota in project {project}, region {region}: {quota}. {message}\n"
            f"Request more at https://console.cloud.google.com/iam-admin/quotas?project={project}, "
            "or use Spot VMs (spot: true draws on the separate preemptible quota), another region with "
            "free quota, or a smaller machine / fewer accelerators."
        )
        return JobError(hint)
    if isinstance(exc, gexc.PermissionDenied):
        return JobError(
            f"{what} was denied in project {project}: {message}\n"
            "The identity running Pulumi needs roles/aiplatform.user on the project and "
            "roles/iam.serviceAccountUser on the job's service account; check both, and that the "
            "Vertex AI API (aiplatform.googleapis.com) is enabled."
        )
    if isinstance(exc, gexc.Unauthenticated):
        return JobError(
            f"{what} was not authenticated: {message}\n"
            "Run `gcloud auth application-default login` (or give CI a workload identity) and retry."
        )
    if isinstance(exc, gexc.InvalidArgument):
        return JobError(
            f"Vertex AI rejected the job spec ({what}): {message}\n"
            f"Check the machine type, accelerator type/count and image for region {region}."
        )
    if isinstance(exc, gexc.FailedPrecondition):
        return JobError(
            f"{what} failed a precondition in project {project}, region {region}: {message}\n"
            "Check that the Vertex AI API is enabled and billing is active for the project."
        )
    if isinstance(exc, gexc.NotFound):
        return JobError(f"{what}: not found: {message}\nCheck the project {project!r} and region {region!r}.")
    return JobError(
        f"{what} failed ({exc.grpc_status_code.name if exc.grpc_status_code else exc.code}): {message}"
    )
