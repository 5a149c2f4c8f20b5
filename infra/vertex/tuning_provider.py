"""TuningJobProvider: the shared job lifecycle with the HyperparameterTuningJob kind (tuning/kind.py).
Pickled by reference into every stack's state: keep this module's path and the class name as they are."""

from __future__ import annotations

from infra.vertex.lifecycle.job_provider import JobProvider
from infra.vertex.tuning.kind import TUNING_JOB


class TuningJobProvider(JobProvider):
    """Create/read/update/delete a hyperparameter tuning job from snake_case props (tuning/spec.py INPUTS)."""

    kind = TUNING_JOB
