"""CustomJobProvider: the Pulumi dynamic provider that runs a training job and tears it down.

Pickled by reference into every stack's state: keep this module's path and the class name as they are.
It is the shared job lifecycle (infra/vertex/lifecycle/) with the CustomJob kind (custom_job/kind.py); it
holds no state, and runners (and their gRPC clients) are made inside each method.
"""

from __future__ import annotations

from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle.job_provider import JobProvider


class CustomJobProvider(JobProvider):
    """Create/read/update/delete a training job from the contract's snake_case props."""

    kind = CUSTOM_JOB
