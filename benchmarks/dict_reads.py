"""Count the reads of the engine's props dict in infra/vertex/ (`props[...]`, `props.get(...)`, and the
shaped copy `shaped[...]`/`shaped.get(...)`), by enclosing function, and say which happen after the boundary.

After the boundary: the enclosing function is reachable, in a static call graph of infra/vertex/, from what
runs once a request is parsed (`JobRequest`'s and `Placed`'s members but `parse`, every kind's `build_job`,
the lifecycle kinds' hooks but the check/diff/preview ones). The graph resolves `f(...)`, `module.f(...)`,
`self.f(...)` and `obj.f(...)` to every function of that name within infra/vertex/, `Class.f(...)` to
that class's, and an attribute read (a property) to every method of that name: an over-approximation.
The model and deployment providers (model/, deployment/) are counted apart: they parse no JobRequest.
The boundary itself (`parse`, a kind's `with_defaults`, `body` and `output_dir`: what turns the dict into
the request) is never entered. Run: `.venv/bin/python benchmarks/dict_reads.py [--list]`.

A figure (benchmarks/ prints figures); tests/vertex/test_layers.py holds the bound (issue 50: at most 15).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERTEX = ROOT / "infra" / "vertex"
DICTS = ("props", "shaped")
# A kind's hooks that run at check, diff or preview time, on the engine's dict (before any JobRequest).
BEFORE_THE_BOUNDARY = {"preview_lines", "shape_costs", "worst_case_usd", "replaces", "replace_lines"}
THE_BOUNDARY = {"parse", "with_defaults", "body", "output_dir"}
ROOT_CLASSES = {"JobRequest", "Placed"}
# The providers that parse no JobRequest (a model version, a deployment): counted apart.
APART = tuple(f"infra.vertex.{name}" for name in ("model", "deployment"))


@dataclass(frozen=True)
class Read:
    module: str  # infra.vertex.x.y
    function: str  # Class.method or function ('<module>' at top level)
    line: int


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _is_dict(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in DICTS
    return isinstance(node, ast.Attribute) and node.attr in DICTS


class _Scan(ast.NodeVisitor):
    """One module's functions (qualified), their dict reads and the names they call."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.stack: list[str] = []
        self.reads: list[Read] = []
        self.calls: dict[str, set[tuple[str | None, str]]] = {}
        self.functions: set[str] = set()
        self.bases: dict[str, list[str]] = {}
        self.called: set[int] = set()  # the ids of the attributes called (not property reads)

    def _where(self) -> str:
        return ".".join(self.stack) or "<module>"

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bases[node.name] = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append(node.name)
        self.functions.add(self._where())
        self.calls.setdefault(self._where(), set())
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _is_dict(node.value) and isinstance(node.ctx, ast.Load):
            self.reads.append(Read(self.module, self._where(), node.lineno))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and _is_dict(func.value):
            self.reads.append(Read(self.module, self._where(), node.lineno))
        where = self.calls.setdefault(self._where(), set())
        self.called.add(id(func))
        if isinstance(func, ast.Name):
            where.add((None, func.id))
        elif isinstance(func, ast.Attribute):
            owner = func.value
            # self.spec.f / self.f / module.f / Class.f / placed.request.f: resolved by the last name
            head = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
            where.add((head, func.attr))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # A property or cached_property read (request.chain, placed.pools) is a call too.
        if id(node) not in self.called:
            self.calls.setdefault(self._where(), set()).add(("?", node.attr))
        self.generic_visit(node)


def _callees(by_name: dict[str, set[str]], head: str | None, name: str) -> set[str]:
    """What a call resolves to: `Class.f(...)` to that class's f; an attribute read (`x.pools`, "?") to a
    method or property of that name; anything else to every function of that name."""
    found = by_name.get(name, set())
    if head == "?":
        return {f for f in found if "." in f.split(":")[1]}
    if head and head[0].isupper():
        return {f for f in found if f.split(":")[1] == f"{head}.{name}"}
    return found


def scan() -> tuple[list[Read], dict[str, set[str]], dict[str, set[str]]]:
    """Every dict read; the call graph (qualified function -> qualified callees); the roots."""
    scans = {}
    for path in sorted(VERTEX.rglob("*.py")):
        found = _Scan(module_name(path))
        found.visit(ast.parse(path.read_text()))
        scans[found.module] = found
    by_name: dict[str, set[str]] = {}
    for found in scans.values():
        for function in found.functions:
            by_name.setdefault(function.split(".")[-1], set()).add(f"{found.module}:{function}")
    graph: dict[str, set[str]] = {}
    roots: set[str] = set()
    for found in scans.values():
        kinds = {name for name, bases in found.bases.items() if {"JobKind", "LifecycleKind"} & set(bases)}
        for function, calls in found.calls.items():
            qualified = f"{found.module}:{function}"
            graph[qualified] = {callee for head, name in calls for callee in _callees(by_name, head, name)}
            parts = function.split(".")
            if parts[-1] in BEFORE_THE_BOUNDARY | THE_BOUNDARY or parts[-1].startswith("__"):
                continue
            if (parts[0] in ROOT_CLASSES and found.module.endswith("lifecycle.request")) or (
                parts[0] in kinds or parts[-1] == "build_job"
            ):
                roots.add(qualified)
    return [r for s in scans.values() for r in s.reads], graph, {"roots": roots}


def after_the_boundary() -> tuple[list[Read], list[Read], list[Read]]:
    """(after the boundary, the model provider's, at check time)."""
    reads, graph, named = scan()
    reached: set[str] = set()
    todo = list(named["roots"])
    while todo:
        function = todo.pop()
        if function in reached or function.split(":")[-1].split(".")[-1] in THE_BOUNDARY:
            continue
        reached.add(function)
        todo.extend(graph.get(function, ()))
    after, model, check = [], [], []
    for read in reads:
        if read.module.startswith(APART):
            model.append(read)
        elif f"{read.module}:{read.function}" in reached:
            after.append(read)
        else:
            check.append(read)
    return after, model, check


def main(argv: list[str]) -> None:
    after, model, check = after_the_boundary()
    total = len(after) + len(model) + len(check)
    print(f"engine-dict reads in infra/vertex/: {total}")
    print(f"  at check time: {len(check)}; model, deployment: {len(model)}; after the boundary: {len(after)}")
    counts = Counter(f"{r.module}:{r.function}" for r in after)
    for where, count in sorted(counts.items()):
        print(f"    {count:3d}  {where}")
    if "--list" in argv:
        for read in after:
            print(f"  {read.module.replace('.', '/')}.py:{read.line}  {read.function}")


if __name__ == "__main__":
    main(sys.argv[1:])
