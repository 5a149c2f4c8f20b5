"""Provider errors, retries of transient failures and rate limits, and actionable messages for the rest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from google.api_core import exceptions as gexc

from infra.dynamic import retries
from infra.dynamic.errors import ProviderError
from infra.dynamic.retries import code_name
from infra.vertex.capacity.machines import LOCATIONS_URL
from infra.vertex.capacity.quotas import quota_page
from infra.vertex.lifecycle import error_classes
from infra.vertex.lifecycle.status import JobStatus

T = TypeVar("T")


class JobError(ProviderError):
    """A job failed, was cancelled, expired or overran; or the API refused a request. `status`: the job that
    ended, if any; `records`: every attempt that led there (the run is recorded before it is raised)."""

    def __init__(
        self,
        message: str,
        api_error: gexc.GoogleAPICallError | None = None,
        status: JobStatus | None = None,
    ) -> None:
        super().__init__(message, api_error)
        self.status = status
        self.records: list[Any] = []


class JobGone(JobError):
    """The job being watched no longer exists (deleted outside this provider)."""


def is_training_quota(exc: Exception) -> bool:
    """HTTP 429 / RESOURCE_EXHAUSTED naming a custom-training resource quota (either wording): waiting does
    not free it, so it is not retried."""
    return isinstance(exc, gexc.TooManyRequests) and error_classes.is_quota(exc.message or "")


def is_rate_limit(exc: Exception) -> bool:
    """HTTP 429 / RESOURCE_EXHAUSTED that is not a training resource quota: too many requests per minute."""
    return isinstance(exc, gexc.TooManyRequests) and not is_training_quota(exc)


def with_retry(call: Callable[[], T], what: str, first_delay: float) -> T:
    """A Vertex AI call with retries (dynamic/retries.py), rate limits included: one that persists is raised
    as it came, for `explain` to turn into quota advice."""
    return retries.with_retry(
        call, what, first_delay, error=JobError, service="Vertex AI", also=is_rate_limit
    )


def explain(exc: gexc.GoogleAPICallError, what: str, project: str, region: str) -> JobError:
    """A JobError telling the user what the permanent API error means and what to do about it."""
    return JobError(_explanation(exc, what, project, region), exc)


def _explanation(exc: gexc.GoogleAPICallError, what: str, project: str, region: str) -> str:
    message = exc.message or str(exc)
    if is_rate_limit(exc):
        return (
            f"{what} was rate limited {retries.RETRY_ATTEMPTS} times in a row (429 RESOURCE_EXHAUSTED): "
            f"{message} "
            f"Project {project} is using up its Vertex AI API request quota in {region}: wait a few "
            "minutes and run `pulumi up` again, run fewer stacks or jobs at once in this project, or "
            "request a higher quota at "
            f" {quota_page(project)}."
        )
    if isinstance(exc, gexc.TooManyRequests):
        quotas = error_classes.quota_names(message)
        quota = ", ".join(quotas) if quotas else "a Vertex AI custom training quota"
        return (
            f"{what} hit a quota in project {project}, region {region}: {quota}. {message} "
            f"Request more at {quota_page(project)}, "
            "or use Spot VMs (spot: true draws on the separate preemptible quota), other regions with "
            "free quota (stack config key fallbackRegions), or a smaller machine / fewer accelerators."
        )
    if isinstance(exc, gexc.PermissionDenied):
        return (
            f"{what} was denied in project {project}: {message} "
            "The identity running Pulumi needs roles/aiplatform.user on the project and "
            "roles/iam.serviceAccountUser on the job's service account; check both, and that the "
            "Vertex AI API (aiplatform.googleapis.com) is enabled."
        )
    if isinstance(exc, gexc.Unauthenticated):
        return (
            f"{what} was not authenticated: {message} "
            "Run `gcloud auth application-default login` (or give CI a workload identity) and retry."
        )
    if isinstance(exc, gexc.InvalidArgument):
        return (
            f"Vertex AI rejected the job spec ({what}): {message} "
            f"Check the machine type, accelerator type/count and image for region {region}."
        )
    if isinstance(exc, gexc.FailedPrecondition):
        return (
            f"{what} failed a precondition in project {project}, region {region}: {message} "
            "Check that the Vertex AI API is enabled and billing is active for the project."
        )
    if isinstance(exc, gexc.NotFound):
        return f"{what}: not found: {message} Check the project {project!r} and region {region!r}."
    return f"{what} failed ({code_name(exc)}): {message}"


def job_failure_hint(error: str, project: str, region: str, spot: bool, quotas: str) -> str:
    """What to do when a job failed because Vertex could not get its machines (quota, capacity, stockout)."""
    if not error_classes.wants_machines(error):
        return ""
    if error_classes.not_offered(error):
        return (
            f"Vertex AI does not offer this GPU with this machine type in {region}: pick another region or "
            f"GPU for this shape ({LOCATIONS_URL} lists where each GPU is offered for training)."
        )
    spot_hint = (
        " Spot VMs were requested: Spot capacity may be exhausted in this region; retry later, set spot: "
        "false, or use another region."
        if spot
        else ""
    )
    return (
        f"This looks like missing quota or capacity for the job's machines in {region}: check {quotas} at "
        f"{quota_page(project)} and request more, or try other regions (stack config key fallbackRegions) or "
        f"a smaller machine / fewer accelerators.{spot_hint}"
    )
