"""A session fixture's result built once for the whole run, however many xdist workers need it: the first
worker to ask builds it under a file lock and leaves it as JSON; the others wait on the lock and read it."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

_PATHS = "__paths__"  # the entries that were Paths (JSON has no Path)


def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this session's xdist workers meet: the session's base temp dir (the workers' common parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[], dict]) -> dict:
    """`build()` (a dict of JSON values and Paths) run once per session; every worker gets an equal dict."""
    shared = shared_dir(tmp_path_factory)
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        built = shared / f"{name}.json"
        if not built.exists():
            result = build()
            paths = sorted(k for k, v in result.items() if isinstance(v, Path))
            stored = {k: str(v) if k in paths else v for k, v in result.items()}
            built.write_text(json.dumps({**stored, _PATHS: paths}))
    stored = json.loads(built.read_text())
    paths = set(stored.pop(_PATHS))
    return {k: Path(v) if k in paths else v for k, v in stored.items()}
