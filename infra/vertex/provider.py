"""CustomJobProvider: the shared job lifecycle with the CustomJob kind (custom_job/kind.py).
Pickled by reference into every stack's state: keep this module's path and the class name as they are."""

from __future__ import annotations

from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle.job_provider import JobProvider


class CustomJobProvider(JobProvider):
    """Create/read/update/delete a training job from the contract's snake_case props."""

    kind = CUSTOM_JOB
