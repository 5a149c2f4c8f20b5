"""A fake Cloud Build / Artifact Registry / Cloud Logging reached through VERTEX_AI_EMULATOR_HOST."""

from collections.abc import Iterator

import pytest

from infra.cloudbuild import builds
from tests.fakes.cloudbuild import FakeCloudBuild


@pytest.fixture
def fake_cloudbuild(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCloudBuild]:
    server = FakeCloudBuild()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", server.start())
    # Retries back off from 10 ms instead of 1 s.
    monkeypatch.setattr(builds, "FIRST_RETRY_DELAY_SECONDS", 0.01)
    yield server
    server.stop()
