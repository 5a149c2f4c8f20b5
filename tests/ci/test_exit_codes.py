"""The exit codes the docs promise are the ones a user sees: through make 0 or 2 (GNU make's own code for any
failure), the command's own through the `.venv/bin/python -m infra.<command>` form."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_plan_exits_2_where_the_command_exits_1_and_the_docs_say_so() -> None:
    through_make = subprocess.run(
        ["make", "--no-print-directory", "plan", "STACK=nosuch"], cwd=ROOT, capture_output=True, text=True
    )
    direct = subprocess.run(
        [".venv/bin/python", "-m", "infra.plan", "--stack", "nosuch"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (through_make.returncode, direct.returncode) == (2, 1)
    assert "no stack file Pulumi.nosuch.yaml" in through_make.stdout
    stack = " ".join((ROOT / "docs" / "stack.md").read_text().split())
    assert "`.venv/bin/python -m infra.plan` exits 1 (`make plan` exits 2" in stack
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "Through `make`, every command exits 0 or 2" in readme
    assert (
        "`.venv/bin/python -m infra.leftovers --stack dev` exits 0: nothing bills; 1: something does; 2:"
        in readme
    )
    leftovers = " ".join((ROOT / "docs" / "leftovers.md").read_text().split())
    assert "Through `make leftovers` both 1 and 2 become make's own 2" in leftovers
