"""Fixtures of the provider's tests."""

from collections.abc import Iterator

import pytest

from tests.fakes.quotas import FakeCloudQuotas
from tests.fakes.vertex import FakeJobService


@pytest.fixture
def fake_vertex_and_quotas(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[FakeJobService, FakeCloudQuotas]]:
    """A fake JobService and a fake Cloud Quotas service on one port, named by VERTEX_AI_EMULATOR_HOST."""
    jobs, quotas = FakeJobService(), FakeCloudQuotas()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(quotas.handler()))
    yield jobs, quotas
    jobs.stop()
