"""Fixtures for the provider's Google clients: the fake JobService with the fake Cloud Logging beside it."""

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from infra.vertex import logs
from tests.fakes.logging import FakeLoggingService
from tests.fakes.vertex import FakeJobService


@dataclass
class FakeGoogle:
    jobs: FakeJobService
    logs: FakeLoggingService


@pytest.fixture
def fake_google(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGoogle]:
    """JobService and LoggingServiceV2 on one port; VERTEX_AI_EMULATOR_HOST points the clients there.

    Log entries are visible at once in the fake, so the provider need not leave them time to settle.
    """
    fake_logs = FakeLoggingService()
    jobs = FakeJobService()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(fake_logs.handler()))
    monkeypatch.setattr(logs, "SETTLE_SECONDS", 0.0)
    yield FakeGoogle(jobs, fake_logs)
    jobs.stop()
