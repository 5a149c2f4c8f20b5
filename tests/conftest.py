"""Fixtures shared across test areas."""

from collections.abc import Iterator

import pytest


@pytest.fixture
def fake_vertex(monkeypatch: pytest.MonkeyPatch) -> Iterator["FakeJobService"]:  # noqa: F821
    """A fake Vertex AI JobService on localhost; VERTEX_AI_EMULATOR_HOST points the real client at it."""
    from tests.fakes.vertex import FakeJobService

    server = FakeJobService()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", server.start())
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def no_google_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches a real Google API with a developer's credentials (the price catalog, say)."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/no-credentials-in-tests.json")
