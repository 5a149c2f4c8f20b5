"""BatchPredictionProvider: the shared job lifecycle with the BatchPredictionJob kind (batch/kind.py).
Pickled by reference into every stack's state: keep this module's path and the class name as they are."""

from __future__ import annotations

from infra.vertex.batch.kind import BATCH_PREDICTION_JOB
from infra.vertex.lifecycle.job_provider import JobProvider


class BatchPredictionProvider(JobProvider):
    """Create/read/update/delete a batch prediction from snake_case props (batch/spec.py INPUTS)."""

    kind = BATCH_PREDICTION_JOB
