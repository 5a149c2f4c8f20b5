"""The one table of the Vertex AI job kinds the project runs: the kill switch, `python -m infra.leftovers` and
the kill switch's custom role learn of a kind from JOB_KINDS alone.

Plain data, no imports: shipped in the kill-switch function's source (infra/components/killswitch.py) and read
by infra/least_privilege/custom_roles.py, which the CrossGuard policy pack loads in its own virtualenv (no
Google client libraries there). A kind's client methods, request type and permissions follow from its API
name, as aiplatform_v1 JobService names them (ListCustomJobs / GetCustomJob / CancelCustomJob, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class JobKind:
    """One kind of Vertex AI job: its resource name in the API, and gcloud's command group for it."""

    name: str  # CustomJob, HyperparameterTuningJob, BatchPredictionJob
    gcloud_group: str | None = None  # `gcloud ai <group> cancel ID --region=R`; None: gcloud has none

    @property
    def _snake(self) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.name).lower()

    @property
    def list_method(self) -> str:
        return f"list_{self._snake}s"

    @property
    def get_method(self) -> str:
        return f"get_{self._snake}"

    @property
    def cancel_method(self) -> str:
        return f"cancel_{self._snake}"

    @property
    def list_request(self) -> str:
        """The request type's name in aiplatform_v1."""
        return f"List{self.name}sRequest"

    @property
    def collection(self) -> str:
        """The resource collection: customJobs, ... (projects/P/locations/R/<collection>/ID)."""
        return self.name[0].lower() + self.name[1:] + "s"

    @property
    def permission(self) -> str:
        """IAM permissions are `<this>.list`, `.get`, `.cancel`."""
        return f"aiplatform.{self.collection}"


# Studies first: a study left running would start its next trial (its trials' CustomJobs carry no stack
# labels: CustomJobSpec has no labels field, so only the study can be found and cancelled, and cancelling it
# stops its running trials). Then the stack's own CustomJobs, then its batch predictions.
# Permission names as the REST references of hyperparameterTuningJobs.cancel, customJobs.cancel (read
# 2026-11-22) and batchPredictionJobs.cancel ("aiplatform.batchPredictionJobs.cancel", read 2026-11-26) give
# them; list and get follow the same pattern. gcloud (2026-11) has `ai custom-jobs` and `ai hp-tuning-jobs`
# groups, none for batch predictions.
JOB_KINDS: tuple[JobKind, ...] = (
    JobKind("HyperparameterTuningJob", "hp-tuning-jobs"),
    JobKind("CustomJob", "custom-jobs"),
    JobKind("BatchPredictionJob"),
)
VERBS = ("cancel", "get", "list")


def permissions(kinds: Iterable[JobKind] = JOB_KINDS) -> tuple[str, ...]:
    """Exactly what listing and cancelling `kinds` needs: list (get for listed jobs) and cancel, sorted."""
    return tuple(sorted(f"{kind.permission}.{verb}" for kind in kinds for verb in VERBS))
