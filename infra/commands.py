"""Commands as a user runs them from the project root, in a fresh shell: the README's form (the project's
virtualenv Python, or make), so a printed command runs as printed."""

from __future__ import annotations

import shlex

# The project's virtualenv (the Makefile's VENV), relative to the project root.
PYTHON = ".venv/bin/python"


def python_m(module: str, *args: str) -> str:
    """`.venv/bin/python -m module args...`, quoted where the shell needs it."""
    return shlex.join([PYTHON, "-m", module, *args])
