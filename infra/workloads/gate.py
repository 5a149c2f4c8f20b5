"""A job that did not succeed stops the resources after it: they take an input that fails unless it did.

`depends_on` only orders resources; a CustomJob that its dollar cap stopped (or any job that ended
CANCELLED) is still a successful create, so its dependents would run on partial data or an empty model dir.
An input built from the upstream job's `state` fails the program instead, after the job's outputs (and the
cap's paragraph in `error`) are recorded. During a preview the state is unknown and nothing is checked.
"""

from __future__ import annotations

from typing import Any

import pulumi

from infra.vertex.custom_job.resource import CustomJob

SUCCEEDED = "JOB_STATE_SUCCEEDED"


class UpstreamJobError(Exception):
    """The job a resource depends on ended without succeeding."""


def require_succeeded(state: str | None, job_name: str | None, error: str | None, dependent: str) -> str:
    """The upstream job's name when it succeeded; else an error naming it, its end and what was not run."""
    if state == SUCCEEDED:
        return job_name or ""
    raise UpstreamJobError(
        f"{dependent} was not run: job {job_name or '(unknown)'} ended {state or 'with no state'}, not "
        f"{SUCCEEDED}. "
        f"{error or 'It reported no error.'}"
    )


def after_success(
    job: CustomJob, dependent: str, value: pulumi.Input[Any] | None = None
) -> pulumi.Output[Any]:
    """`value` (default: the job's name), known only once `job` succeeded; `dependent` names what waits."""
    checked = pulumi.Output.all(job.state, job.job_name, job.error).apply(
        lambda parts: require_succeeded(parts[0], parts[1], parts[2], dependent)
    )
    if value is None:
        return checked
    return pulumi.Output.all(checked, value).apply(lambda parts: parts[1])
