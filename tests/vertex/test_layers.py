"""The layers of infra/vertex import one way (docs/architecture.md): capacity/ holds machine and shape facts
and imports nothing from lifecycle/, cost/ or a kind; cost/ imports no kind; lifecycle/ imports no kind, no
runner and no log reader."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

VERTEX = Path(__file__).resolve().parents[2] / "infra" / "vertex"
KINDS = ("custom_job", "tuning", "batch", "model", "kinds")
RULES = {
    "capacity": ("lifecycle", "cost", "runners", "logs", *KINDS),
    "cost": KINDS,
    "lifecycle": ("runners", "logs", *KINDS),
}


def imported(path: Path) -> set[str]:
    """The infra.vertex subpackages a module imports (any import, TYPE_CHECKING ones included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["infra", "vertex"] and len(parts) > 2:
                found.add(parts[2])
    return found


@pytest.mark.parametrize("layer", sorted(RULES))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    modules = sorted((VERTEX / layer).glob("*.py"))
    assert modules
    wrong = {
        path.name: sorted(imported(path) & set(RULES[layer]))
        for path in modules
        if imported(path) & set(RULES[layer])
    }
    assert wrong == {}
