"""Fixtures for the provider's Google clients: the fake JobService, with fake Logging / Quotas beside it."""

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from infra.vertex.cost import pricing
from infra.vertex.lifecycle import restarts
from infra.vertex.logs import cloud as logs
from tests.fakes.billing import FakeCloudCatalog
from tests.fakes.logging import FakeLoggingService
from tests.fakes.quotas import FakeCloudQuotas
from tests.fakes.storage import FakeStorage
from tests.fakes.vertex import FakeJobService
from tests.fakes.vertex_tuning import FakeTuningJobService


@dataclass
class FakeGoogle:
    jobs: FakeJobService
    logs: FakeLoggingService


@pytest.fixture
def fake_google(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGoogle]:
    """JobService and LoggingServiceV2 on one port; VERTEX_AI_EMULATOR_HOST points the clients there."""
    fake_logs = FakeLoggingService()
    jobs = FakeJobService()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(fake_logs.handler()))
    yield FakeGoogle(jobs, fake_logs)
    jobs.stop()


@pytest.fixture
def fake_vertex_and_quotas(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[FakeJobService, FakeCloudQuotas]]:
    """A fake JobService and a fake Cloud Quotas service on one port, named by VERTEX_AI_EMULATOR_HOST."""
    jobs, quotas = FakeJobService(), FakeCloudQuotas()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(quotas.handler()))
    yield jobs, quotas
    jobs.stop()


@pytest.fixture(autouse=True)
def fake_storage(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeStorage]:
    """Every provider test reads a finished job's metrics.json from here, never from real Cloud Storage."""
    storage = FakeStorage()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", storage.start())
    yield storage
    storage.stop()


@pytest.fixture(autouse=True)
def no_log_settle_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake log entries are visible at once: no time to settle (the tests of that set it themselves)."""
    monkeypatch.setattr(logs, "SETTLE_SECONDS", 0.0)


@pytest.fixture(autouse=True)
def no_resubmit_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new attempt is submitted at once (test_restarts checks the real delays)."""
    monkeypatch.setattr(restarts, "resubmit_delay", lambda _attempt: 0.0)


@pytest.fixture
def fake_vertex_and_catalog(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[FakeJobService, FakeCloudCatalog]]:
    """A fake JobService and a fake Cloud Billing Catalog on one port; the price cache starts empty."""
    jobs, catalog = FakeJobService(), FakeCloudCatalog()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(catalog.handler()))
    pricing.Catalog.forget()
    yield jobs, catalog
    jobs.stop()
    pricing.Catalog.forget()


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> str:
    """40 synthetic 32 px images as TFRecords, for the tests that run the real trainer through a runner."""
    out = tmp_path_factory.mktemp("tiny") / "data"
    subprocess.run(
        [
            *(sys.executable, "-m", "trainer.create_tfrecords", "--source", "synthetic", "--count", "40"),
            *("--image-size", "32", "--output", str(out)),
        ],
        check=True,
        capture_output=True,
    )
    return str(out)


# A grid over learning rate and batch size: its trials' metrics (tests of studies pick the best from these).
SCORES = {(0.001, 16.0): 0.61, (0.001, 32.0): 0.55, (0.01, 16.0): 0.83, (0.01, 32.0): 0.72}


@pytest.fixture
def fake_study(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTuningJobService]:
    """The tuning fake, its trials scored by SCORES, reached through VERTEX_AI_EMULATOR_HOST."""
    service = FakeTuningJobService()
    service.metric_for = lambda p: SCORES[(p["learning-rate"], p["batch-size"])]
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", service.start())
    yield service
    service.stop()
