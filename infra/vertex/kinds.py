"""The job kinds this project runs on Vertex AI: what the commands around the stack need to know of each, on
top of the one table of kinds in infra/guard/job_kinds.py (names, collections, what the kill switch and
`make leftovers` list and cancel; infra/guard imports nothing from infra, so the table lives there).

`infra.preflight` derives the permissions to test from `collection` (the REST collection, as IAM names the
permissions: aiplatform.<collection>.<verb>), `infra.runs` lists the runs under each `run_folder`, and each
lifecycle kind (infra/vertex/*/kind.py) takes its API kind and run-record kind from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.guard.job_kinds import JOB_KINDS, JobKind


@dataclass(frozen=True)
class KindFacts:
    job: JobKind  # the kind in infra/guard's table
    record_kind: str  # run.json's `kind`
    run_folder: str  # where the stack writes this kind's runs under its output root (workloads/)
    what: str  # how preflight names what the permissions are for

    @property
    def api_kind(self) -> str:
        """The Vertex resource: CreateCustomJob, ListCustomJobs, ..."""
        return self.job.name

    @property
    def collection(self) -> str:
        """REST collection and IAM permission stem: aiplatform.customJobs.create."""
        return self.job.collection


def _guarded(name: str) -> JobKind:
    return next(kind for kind in JOB_KINDS if kind.name == name)


CUSTOM_JOB = KindFacts(_guarded("CustomJob"), "custom_job", "runs", "CustomJobs")
TUNING_JOB = KindFacts(_guarded("HyperparameterTuningJob"), "tuning_job", "tuning", "tuning studies")
BATCH_PREDICTION_JOB = KindFacts(
    _guarded("BatchPredictionJob"), "batch_prediction_job", "predictions", "batch predictions"
)
KINDS = (CUSTOM_JOB, TUNING_JOB, BATCH_PREDICTION_JOB)
# The verbs of the shared lifecycle: submit, adopt by key label (list), watch (get), cancel and delete on
# destroy (REST references of customJobs / hyperparameterTuningJobs / batchPredictionJobs, read 2026-11-26).
LIFECYCLE_VERBS = ("create", "list", "get", "cancel", "delete")


def run_folders() -> tuple[str, ...]:
    return tuple(dict.fromkeys(kind.run_folder for kind in KINDS))


def permissions(kind: KindFacts) -> tuple[str, ...]:
    return tuple(f"aiplatform.{kind.collection}.{verb}" for verb in LIFECYCLE_VERBS)
