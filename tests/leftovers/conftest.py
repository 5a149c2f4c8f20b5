"""A cloud stack's leftovers on fakes of the services, driven by the real clients: Vertex AI's JobService
(every job kind) and Locations, EndpointService, Artifact Registry, Cloud Functions, TensorBoards, models
on one gRPC port (VERTEX_AI_EMULATOR_HOST), Cloud Storage's JSON API (STORAGE_EMULATOR_HOST)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.cloud import aiplatform_v1

from infra.config import REPO_ROOT
from infra.dynamic.endpoints import EMULATOR_ENV
from infra.leftovers import vertex_jobs
from infra.leftovers.command import main
from infra.leftovers.storage_prices import StorageCatalog
from tests.fakes.billing import FakeCloudCatalog
from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.inventory import FakeInventory
from tests.fakes.metadata import FakeMetadataService
from tests.fakes.storage import FakeStorage
from tests.fakes.vertex import JobState
from tests.fakes.vertex_jobs import FakeVertexJobs
from tests.stack.conftest import stack_values

PROJECT, STACK = "leftovers-test-1", "lt"
HOME, FALLBACK = "us-central1", "us-east4"
LABELS = {"managed-by": "pulumi", "pulumi_project": "vertex-training", "pulumi_stack": STACK}
OTHER = {**LABELS, "pulumi_stack": "prod"}


def parent(region: str) -> str:
    return f"projects/{PROJECT}/locations/{region}"


@dataclass
class Cloud:
    root: Path
    vertex: FakeVertexJobs
    inventory: FakeInventory
    storage: FakeStorage
    metadata: FakeMetadataService
    catalog: FakeCloudCatalog
    endpoints: FakeEndpointService

    def leftovers(self, *args: str) -> int:
        return main(["--stack", STACK, *args], root=self.root)

    def json(self, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
        code = self.leftovers("--json", *args)
        return code, json.loads(capsys.readouterr().out)

    def job(self, region: str, labels: dict[str, str], state: JobState = JobState.JOB_STATE_RUNNING) -> str:
        return self.vertex.add_job(
            parent(region), aiplatform_v1.CustomJob(display_name="train", labels=labels), state
        )

    def study(self, region: str, labels: dict[str, str], state: JobState = JobState.JOB_STATE_RUNNING) -> str:
        study = aiplatform_v1.HyperparameterTuningJob(display_name="tune", labels=labels)
        return self.vertex.add_study(parent(region), study, state)

    def batch(self, region: str, labels: dict[str, str], state: JobState = JobState.JOB_STATE_RUNNING) -> str:
        job = aiplatform_v1.BatchPredictionJob(display_name="classify", labels=labels)
        return self.vertex.add_job(parent(region), job, state)


def write_stack(root: Path, stack: str, values: dict[str, Any]) -> None:
    shutil.copy(REPO_ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": values}))


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cloud]:
    """The dev stack's file as `lt` in project leftovers-test-1, with us-east4 as its fallback region."""
    vertex, inventory, storage = FakeVertexJobs(), FakeInventory(), FakeStorage()
    metadata = FakeMetadataService()
    catalog = FakeCloudCatalog()  # serves Vertex AI only until a test adds other services' SKUs
    endpoints = FakeEndpointService()
    endpoints.operation_polls = 0
    monkeypatch.setenv(
        EMULATOR_ENV,
        vertex.start(*inventory.handlers(), metadata.handler(), catalog.handler(), endpoints.handler()),
    )
    StorageCatalog.forget()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", storage.start())
    monkeypatch.setattr(vertex_jobs, "POLL_SECONDS", 0.01)
    values = stack_values("dev", gcpProject=PROJECT, region=HOME, fallbackRegions=[FALLBACK])
    write_stack(tmp_path, STACK, values)
    yield Cloud(tmp_path, vertex, inventory, storage, metadata, catalog, endpoints)
    StorageCatalog.forget()
    vertex.stop()
    storage.stop()
