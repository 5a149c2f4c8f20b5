"""The job kinds this project runs on Vertex AI, in one table: what the commands around the stack need to
know of each (the kill switch keeps its own table in infra/guard, which imports nothing from infra).

`infra.preflight` derives the permissions to test from `collection` (the REST collection, as IAM names the
permissions: aiplatform.<collection>.<verb>), `infra.runs` lists the runs under each `run_folder`, and each
lifecycle kind (infra/vertex/*/kind.py) takes its API kind and run-record kind from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KindFacts:
    api_kind: str  # the Vertex resource: CreateCustomJob, ListCustomJobs, ...
    collection: str  # REST collection and IAM permission stem: aiplatform.customJobs.create
    record_kind: str  # run.json's `kind`
    run_folder: str  # where the stack writes this kind's runs under its output root (workloads/)
    what: str  # how preflight names what the permissions are for


CUSTOM_JOB = KindFacts("CustomJob", "customJobs", "custom_job", "runs", "CustomJobs")
TUNING_JOB = KindFacts(
    "HyperparameterTuningJob", "hyperparameterTuningJobs", "tuning_job", "tuning", "tuning studies"
)
BATCH_PREDICTION_JOB = KindFacts(
    "BatchPredictionJob", "batchPredictionJobs", "batch_prediction_job", "predictions", "batch predictions"
)
KINDS = (CUSTOM_JOB, TUNING_JOB, BATCH_PREDICTION_JOB)
# The verbs of the shared lifecycle: submit, adopt by key label (list), watch (get), cancel and delete on
# destroy (REST references of customJobs / hyperparameterTuningJobs / batchPredictionJobs, read 2026-11-26).
LIFECYCLE_VERBS = ("create", "list", "get", "cancel", "delete")


def run_folders() -> tuple[str, ...]:
    return tuple(dict.fromkeys(kind.run_folder for kind in KINDS))


def permissions(kind: KindFacts) -> tuple[str, ...]:
    return tuple(f"aiplatform.{kind.collection}.{verb}" for verb in LIFECYCLE_VERBS)
