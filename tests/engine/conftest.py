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
