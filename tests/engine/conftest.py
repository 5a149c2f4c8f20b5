"""Hosts started as the engine starts them; each is killed (with its process group) after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.engine.host import Launch, ProviderHost, this_project


@pytest.fixture
def start_host(tmp_path: Path) -> Iterator[Callable[..., ProviderHost]]:
    """start_host(launch=None, **env): a configured host for this project (or `launch`), env added."""
    hosts: list[ProviderHost] = []

    def start(launch: Launch | None = None, **env: str) -> ProviderHost:
        host = ProviderHost(launch or this_project(**env), tmp_path / f"host-{len(hosts)}.stderr")
        hosts.append(host)
        host.configure()
        return host

    yield start
    for host in hosts:
        host.stop()


@pytest.fixture(scope="module")
def checking_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderHost]:
    """One configured host for a module's check/diff-only tests (they change nothing in it): one start
    (about 3 s) a module instead of one a test. Tests that create, wait, read the host's stderr or need an
    emulator's address use `start_host`."""
    # tests/conftest.py's per-test no_google_credentials does not reach a module's fixture: the same here.
    launch = this_project(GOOGLE_APPLICATION_CREDENTIALS="/nonexistent/no-credentials-in-tests.json")
    host = ProviderHost(launch, tmp_path_factory.mktemp("checking-host") / "host.stderr")
    host.configure()
    yield host
    host.stop()
