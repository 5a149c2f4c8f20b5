"""Stack files for the plan's tests: the committed ones, or one written into a project of the test's own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.vertex.cost.pricing import Catalog
from tests.stack.conftest import ROOT, committed_values


@pytest.fixture(autouse=True)
def catalog_read_again() -> Iterator[None]:
    """The plan marks this process's catalog as not to be read: later tests read theirs again."""
    yield
    Catalog.forget()


def write_stack(root: Path, stack: str, values: dict[str, Any]) -> Path:
    """A project at `root` (this one's Pulumi.yaml) with Pulumi.<stack>.yaml holding `values`."""
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": values}))
    return root


def dev_with(**overrides: Any) -> dict[str, Any]:
    """Pulumi.dev.yaml's values with `vertex-training:<key>` overrides (None removes the key)."""
    values = committed_values("dev")
    for key, value in overrides.items():
        values.pop(f"vertex-training:{key}", None)
        if value is not None:
            values[f"vertex-training:{key}"] = value
    return values
