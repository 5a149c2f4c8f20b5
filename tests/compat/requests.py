"""The requests each job provider sends to Google's JobService for every committed stack and every job kind,
for tests/compat/test_requests.py (issue 39: a refactor keeps every request byte-for-byte the same).

Recorded once, then committed:

    .venv/bin/python -m tests.compat.requests      # writes tests/compat/requests.json

Per variant (a committed stack file as committed, or with the keys that turn on a kind it does not run) the
stack is built under Pulumi's mock runtime; every job resource's inputs go through its provider's check and
create against the fake JobService (tests/fakes), whose every create is refused as "not offered" so that the
provider submits the job on each shape of its chain in turn. What is stored per job: the checked inputs (the
props: replayed as they are, so that a change elsewhere, such as the trainer's image digest, does not move
the figure) and each Create request as its JSON (proto field names, enums by name).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from infra.vertex.batch_provider import BatchPredictionProvider
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.provider import CustomJobProvider
from infra.vertex.tuning_provider import TuningJobProvider
from tests.fakes.metadata import FakeMetadataService
from tests.fakes.quotas import FakeCloudQuotas
from tests.fakes.storage import FakeStorage
from tests.fakes.vertex import NOT_OFFERED
from tests.fakes.vertex_tuning import FakeTuningJobService
from tests.stack.test_tuning_stack import STUDY  # the study the stack tests use
from tests.vertex.batch_props import put_model

GOLDEN = Path(__file__).with_name("requests.json")
CUSTOM_JOB = "pulumi-python:dynamic/vertex:CustomJob"
TUNING_JOB = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"
BATCH_JOB = "pulumi-python:dynamic/vertex:BatchPredictionJob"
PROVIDERS: dict[str, Any] = {
    CUSTOM_JOB: CustomJobProvider,
    TUNING_JOB: TuningJobProvider,
    BATCH_JOB: BatchPredictionProvider,
}
BATCH = {
    "images": "gs://demo-images/held-back/",
    "machineType": "n1-standard-8",
    "acceleratorType": "NVIDIA_TESLA_T4",
    "acceleratorCount": 1,
    "startingReplicaCount": 1,
    "maxReplicaCount": 3,
    # No fallback region: a batch prediction runs in its model's region only (issue 41, batch/spec.py).
    "fallbacks": [
        {"machineType": "n1-highmem-8"},
        {"acceleratorType": "NVIDIA_L4", "machineType": "g2-standard-8"},
    ],
    "timeoutSeconds": 7200,
}
# The local stacks run on this machine (runner: local) and send Google nothing: they are recorded on Vertex.
ON_VERTEX = {"runner": "vertex", "gcpProject": "acme-vt-{stack}", "billingAccount": "0A1B2C-3D4E5F-6A7B8C"}
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "dev": ("dev", {}),
    "prod": ("prod", {}),
    "cassava": ("cassava", {}),
    "local-on-vertex": ("local", {**ON_VERTEX, "batchPrediction": {"images": BATCH["images"]}}),
    "housing-on-vertex": ("housing", ON_VERTEX),
    "dev+tuning": ("dev", {"tuning": STUDY, "trainWithBest": True}),
    "prod+tuning": ("prod", {"tuning": STUDY}),
    "prod+batch": ("prod", {"batchPrediction": BATCH}),
    "dev+experiment": ("dev", {"experiment": "vt-dev"}),
    "dev+reservation": (
        "dev",
        {
            "spot": False,
            "fallbacks": None,
            "reservationAffinity": {
                "type": "SPECIFIC_RESERVATION",
                "reservation": "projects/acme-vt-dev/zones/us-central1-a/reservations/r1",
            },
            "capacityDeadlineSeconds": 0,
        },
    ),
}


def _json(message: Any) -> Any:
    return json.loads(type(message).to_json(message, use_integers_for_enums=False))


def stack_jobs(variant: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(resource name, type, inputs) of every job resource the variant's stack registers."""
    from tests.stack.conftest import run_stack

    stack, overrides = VARIANTS[variant]
    overrides = {k: v.format(stack=stack) if isinstance(v, str) else v for k, v in overrides.items()}
    run = run_stack(stack, **overrides)
    return [
        (r.name, r.type, {k: v for k, v in r.inputs.items() if k != "__provider"})
        for r in run.resources
        if r.type in PROVIDERS
    ]


QUOTA = "The following quotas are exceeded: CustomModelTrainingT4GPUsPerProjectPerRegion"
# The images a batch prediction lists before it is submitted (batch/kind.py writes their file list).
IMAGE_NAMES = ("cat-1.png", "dog-2.jpg")


@contextmanager
def refusing_google() -> Iterator[tuple[FakeTuningJobService, FakeStorage]]:
    """A JobService (with Cloud Quotas and Metadata beside it) that refuses every create as not offered, and
    Cloud Storage holding the batch prediction's images."""
    jobs, quotas, metadata, storage = (
        FakeTuningJobService(),
        FakeCloudQuotas(),
        FakeMetadataService(),
        FakeStorage(),
    )
    jobs.capacity_of = lambda _region, _job: NOT_OFFERED  # type: ignore[method-assign]
    # The study fake takes any shape: its create is refused for quota instead (Vertex's wording, errors.py).
    jobs.fail("CreateHyperparameterTuningJob", grpc.StatusCode.RESOURCE_EXHAUSTED, times=1000, message=QUOTA)
    for name in IMAGE_NAMES:
        storage.put(BATCH["images"] + name, b"image bytes")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(quotas.handler(), metadata.handler()))
        mp.setenv("STORAGE_EMULATOR_HOST", storage.start())
        mp.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/no-credentials-in-tests.json")
        try:
            yield jobs, storage
        finally:
            jobs.stop()
            storage.stop()


def sent_requests(resource_type: str, props: dict[str, Any]) -> dict[str, Any]:
    """Every Create request the provider sends for these props (one per shape of its chain), and the objects
    it writes to Cloud Storage before it submits."""
    provider = PROVIDERS[resource_type]()
    # Every shape is submitted, priced or not: under a dollar cap a shape without a price is skipped
    # (cost/limits.py, issue 43; tests/vertex/test_price_limits.py), which would leave its request unrecorded.
    # allow_unpriced_shapes changes nothing in any request (it is never sent to Google).
    checked = provider.check({}, {**props, "wait": False, "allow_unpriced_shapes": True})
    assert not checked.failures, checked.failures
    with refusing_google() as (jobs, storage):
        if isinstance(props.get("artifact_uri"), str):  # the trainer's export, which the job checks first
            put_model(storage, props["artifact_uri"])
        before = set(storage.objects)
        with contextlib.suppress(JobError):  # every shape refused: the chain ends in an error
            provider.create(checked.inputs)
        creates = [
            {"method": method, "request": _json(request)}
            for method, request in jobs.calls
            if "Create" in method
        ]
        written = {
            f"gs://{bucket}/{name}": data.decode()
            for (bucket, name), data in storage.objects.items()
            if (bucket, name) not in before
        }
    return {"creates": creates, "written": written}


def record() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for variant in VARIANTS:
        for name, resource_type, props in stack_jobs(variant):
            found[f"{variant}/{name}"] = {
                "type": resource_type,
                "props": props,
                "sent": sent_requests(resource_type, props),
            }
    return found


def main() -> None:
    GOLDEN.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
