"""The layers of infra/vertex import one way (docs/architecture.md): capacity/ holds machine and shape facts
and imports nothing from lifecycle/, cost/ or a kind; cost/ imports no kind and nothing from lifecycle/;
lifecycle/ imports no kind, no runner and no log reader; runners/ and logs/ import no kind; deployment/
imports no job lifecycle, runner, log reader or kind, and nothing below it imports deployment/; and no two
packages import each other, whatever the path (module-level, TYPE_CHECKING and in-function imports)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

VERTEX = Path(__file__).resolve().parents[2] / "infra" / "vertex"
KINDS = ("custom_job", "tuning", "batch", "model", "kinds")
RULES = {
    "capacity": ("lifecycle", "cost", "runners", "logs", "deployment", *KINDS),
    "cost": ("lifecycle", "runners", "logs", "deployment", *KINDS),
    "lifecycle": ("runners", "logs", "deployment", *KINDS),
    "runners": ("logs", "deployment", *KINDS),
    "logs": ("runners", "deployment", *KINDS),
    # A deployment has no end: it sits on capacity/ and cost/, never on the job lifecycle.
    "deployment": ("lifecycle", "runners", "logs", *KINDS),
}
# The pickled provider modules stay where stacks' state names them (/work/shared/ARCHITECTURE.md): a kind's
# resource.py names its provider class, the provider re-exports the kind's; they are no package.
PROVIDERS = frozenset(
    {"provider", "tuning_provider", "model_provider", "batch_provider", "deployment_provider"}
)


def imported(path: Path) -> set[str]:
    """The infra.vertex subpackages (or top-level modules) a module imports: any import, TYPE_CHECKING and
    in-function ones included."""
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


def package_of(path: Path) -> str:
    """`cost` for infra/vertex/cost/limits.py, `kinds` for infra/vertex/kinds.py."""
    parts = path.relative_to(VERTEX).parts
    return parts[0] if len(parts) > 1 else path.stem


def package_graph() -> dict[str, set[str]]:
    """Which package imports which, over every module of infra/vertex (the provider modules aside)."""
    graph: dict[str, set[str]] = {}
    for path in VERTEX.rglob("*.py"):
        source = package_of(path)
        if source in PROVIDERS:
            continue
        targets = graph.setdefault(source, set())
        targets.update(imported(path) - PROVIDERS - {source})
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more packages (Tarjan), each sorted: a cycle lies in one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_packages_import_each_other() -> None:
    graph = package_graph()
    assert {"capacity", "cost", "lifecycle", "runners", "logs", "custom_job"} <= set(graph)
    assert cycles(graph) == []


def test_the_cycle_check_sees_a_cycle_through_an_import_inside_a_function(tmp_path: Path) -> None:
    """The check is not vacuous: an in-function import closing a three-package loop is a cycle."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from infra.vertex.runners import trials\n")
    graph = {"cost": {"lifecycle"}, "lifecycle": {"capacity"}, "capacity": imported(source)}
    assert cycles(graph) == [] and imported(source) == {"runners"}
    graph["runners"] = {"cost"}
    assert cycles(graph) == [["capacity", "cost", "lifecycle", "runners"]]


def test_past_the_boundary_the_engines_dict_is_read_at_most_15_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50's bound, counted by benchmarks/dict_reads.py: after JobRequest.parse, the props dict is read
    only where a contract needs it (the key label, the inputs copied into the outputs)."""
    spec = importlib.util.spec_from_file_location(
        "dict_reads", VERTEX.parents[1] / "benchmarks" / "dict_reads.py"
    )
    assert spec is not None and spec.loader is not None
    dict_reads = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "dict_reads", dict_reads)  # its dataclasses look their module up
    spec.loader.exec_module(dict_reads)
    after, _model, check = dict_reads.after_the_boundary()
    assert len(check) > 50  # the checks still read the dict: the count sees it
    assert len(after) <= 15, after
    assert {read.function for read in after} == {"job_key", "JobProvider.outcome"}
