"""Why a job or a request ended, from its error text: quota, no capacity, preemption, or something else.
One table for every wording Vertex AI and Compute Engine use, each row with its source (read 2026-11-25),
so the lifecycle (give way, resubmit), the failure hints, the cost report and the fake services agree."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Outcome(enum.Enum):
    QUOTA = "quota"  # a custom-training quota of the project is too small: another shape or region, or ask
    NO_CAPACITY = "no capacity"  # Google had no machines for the shape (a stockout): another shape or region
    PREEMPTED = "preempted"  # Spot VMs taken back while the job ran: the same shape again resumes it
    # Vertex refused the GPU at submission (not offered with this machine type here, or no longer at all):
    # another shape or region may be offered. Check only warns for a region its dated table does not list.
    NOT_OFFERED = "not offered"
    OTHER = "other"


@dataclass(frozen=True)
class Wording:
    pattern: str  # a regular expression, matched case-insensitively anywhere in the text
    outcome: Outcome
    sample: str  # the wording as the source shows it (the fakes send these; the tests feed every one)
    source: str


WORDINGS: tuple[Wording, ...] = (
    Wording(
        r"quota metrics exceed quota limits|custom_model_training\w*",
        Outcome.QUOTA,
        "The following quota metrics exceed quota limits: "
        "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus",
        "Vertex AI quota error (429 RESOURCE_EXHAUSTED) as quoted in "
        "GoogleCloudPlatform/training-data-analyst issue 2457 and public write-ups of it; metric names: "
        "cloud.google.com/vertex-ai/docs/quotas",
    ),
    Wording(
        r"\bCustomModelTraining\w*PerProjectPerRegion\b",
        Outcome.QUOTA,
        "The following quotas are exceeded: CustomModelTrainingT4GPUsPerProjectPerRegion",
        "quota-id wording in public Ray-on-Vertex logs; ids follow get_quota_id in "
        "GoogleCloudPlatform/vertex-ai-samples (notebook_util/common_util.py)",
    ),
    Wording(
        r"resources are insufficient in region",
        Outcome.NO_CAPACITY,
        "Resources are insufficient in region: us-central1. Try a different region or use a different "
        "accelerator.",
        "Vertex AI, Understanding the training service (cloud.google.com/vertex-ai/docs/training/"
        "understanding-training-service)",
    ),
    Wording(
        r"zone_resource_pool_exhausted|does not have enough resources available",
        Outcome.NO_CAPACITY,
        "ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/demo-project/zones/us-central1-a' does not have "
        "enough resources available to fulfill the request. Try a different zone, or try again later.",
        "Compute Engine, Troubleshoot resource availability errors (cloud.google.com/compute/docs/"
        "resource-error)",
    ),
    Wording(
        r"is currently unavailable in the \S+ zone",
        Outcome.NO_CAPACITY,
        "A n1-standard-8 VM instance with 1 nvidia-tesla-t4 is currently unavailable in the us-central1-a "
        "zone.",
        "Compute Engine, Troubleshoot resource availability errors (cloud.google.com/compute/docs/"
        "resource-error)",
    ),
    Wording(
        r"resources? (?:are|is) not available",
        Outcome.NO_CAPACITY,
        "Resources are not available in region us-central1.",
        "no Google page found (searched 2026-11-25); kept because this project's failure hint has treated it "
        "as capacity since issue 16",
    ),
    Wording(
        r"stockout",
        Outcome.NO_CAPACITY,
        "The job failed with a STOCKOUT error.",
        "Vertex AI, Use Spot VMs with training, Preemption handling: a preempted job 'fails with a STOCKOUT "
        "error' (cloud.google.com/vertex-ai/docs/training/use-spot-vms)",
    ),
    Wording(
        r"accelerator \"?\w+\"? is not supported for machine type",
        Outcome.NOT_OFFERED,
        'Accelerator "NVIDIA_TESLA_K80" is not supported for machine type "n1-standard-4"',
        "Vertex AI's 400 INVALID_ARGUMENT to CreateCustomJob as quoted in GoogleCloudPlatform/"
        "vertex-ai-samples issue 213 (2022-01-14) and, once Google stopped offering the GPU (K80 end of "
        "support, cloud.google.com/compute/docs/eol/k80-eol), GoogleCloudPlatform/python-docs-samples issue "
        "13233 (2025-03-14); read 2026-11-26. No Google page quotes the refusal of a GPU in a region that "
        "does not offer it: this is the nearest documented wording",
    ),
    Wording(
        r"accelerator type \"?[\w-]+\"? does not exist in zone",
        Outcome.NOT_OFFERED,
        'Accelerator type "nvidia-l4" does not exist in zone us-west4-b.',
        "Compute Engine's 400 for a GPU its zone does not offer, as quoted in GoogleCloudPlatform/"
        "kubernetes-engine-samples issue 1738 (2025-07-16, read 2026-11-26)",
    ),
    Wording(
        r"\bpreempt(?:ed|ion)\b",  # not "preemptible", a word quota ids and strategy names use
        Outcome.PREEMPTED,
        "The replica workerpool0-0 was preempted.",
        "Compute Engine, Spot VMs: 'Compute Engine might preempt Spot VMs' (cloud.google.com/compute/docs/"
        "instances/spot)",
    ),
)
_QUOTA_NAMES = re.compile(r"aiplatform\.googleapis\.com/\w+|\bCustomModelTraining\w*PerProjectPerRegion\b")
_COMPILED = tuple((re.compile(w.pattern, re.IGNORECASE), w.outcome) for w in WORDINGS)


def classify(text: str) -> Outcome:
    """The first row whose wording the text holds, else OTHER."""
    for pattern, outcome in _COMPILED:
        if pattern.search(text or ""):
            return outcome
    return Outcome.OTHER


def is_quota(text: str) -> bool:
    return classify(text) is Outcome.QUOTA


def quota_names(text: str) -> list[str]:
    """The quota metrics or ids a quota error names, sorted."""
    return sorted(set(_QUOTA_NAMES.findall(text)))


def lost_machines(text: str) -> bool:
    """Machines could not be had (a stockout) or were taken back (preemption)."""
    return classify(text) in (Outcome.NO_CAPACITY, Outcome.PREEMPTED)


def not_offered(text: str) -> bool:
    """Vertex refused the shape's GPU where it was submitted: the next shape may be offered."""
    return classify(text) is Outcome.NOT_OFFERED


def wants_machines(text: str) -> bool:
    """Quota, capacity, preemption or a GPU not offered: another shape may run, the capacity paragraph
    applies."""
    return classify(text) is not Outcome.OTHER
