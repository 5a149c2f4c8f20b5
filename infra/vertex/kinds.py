"""The Vertex job kinds this project runs, one Kind each (lifecycle/kind.py): `infra.preflight` tests each
kind's `collection` permissions, `infra.runs` lists the runs under each `run_folder`."""

from __future__ import annotations

from infra.vertex.batch.kind import BATCH_PREDICTION_JOB
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle.kind import Kind
from infra.vertex.tuning.kind import TUNING_JOB

__all__ = [
    "BATCH_PREDICTION_JOB",
    "CUSTOM_JOB",
    "KINDS",
    "LIFECYCLE_VERBS",
    "TUNING_JOB",
    "permissions",
    "run_folders",
]

# infra/guard/job_kinds.py stays the import-free table of what the kill switch and `make leftovers` list and
# cancel (it ships in the kill-switch function's source); every kind here names its row there by `api_kind`
# (tests/vertex/test_kind_contract.py ties the two).
KINDS: tuple[Kind, ...] = (CUSTOM_JOB, TUNING_JOB, BATCH_PREDICTION_JOB)
# The verbs of the shared lifecycle: submit, adopt by key label (list), watch (get), cancel and delete on
# destroy (REST references of customJobs / hyperparameterTuningJobs / batchPredictionJobs, read 2026-11-26).
LIFECYCLE_VERBS = ("create", "list", "get", "cancel", "delete")


def run_folders() -> tuple[str, ...]:
    return tuple(dict.fromkeys(kind.run_folder for kind in KINDS))


def permissions(kind: Kind) -> tuple[str, ...]:
    return tuple(f"aiplatform.{kind.collection}.{verb}" for verb in LIFECYCLE_VERBS)
