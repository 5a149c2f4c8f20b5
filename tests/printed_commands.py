"""The commands a message prints, and checks that they run as printed: local ones (the README's form, `make`
or `.venv/bin/python -m`) run in a fresh shell from a project root; `gcloud` and `pulumi` ones parse.

A command is a backticked text whose first word is one of COMMANDS (`a && b` is two); any other backticked
text (a line of a file, a key) is not one."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ("make", ".venv/bin/python")
CLOUD = ("gcloud", "pulumi")
# `python` is not the README's form: it is collected to be refused.
COMMANDS = (*LOCAL, *CLOUD, "python", "python3")
# A placeholder a user fills in (<your-project-id>, <folder>/*): such a command is checked as shell only.
PLACEHOLDER = re.compile(r"<[A-Za-z_-]+>")
# What says a command did not run as printed: no such program or module, or flags its parser refuses.
NOT_RUN = re.compile(
    r"No module named|command not found|No such file or directory: '\.venv|"
    r"unrecognized arguments|the following arguments are required|invalid choice|No rule to make target"
)
# The gcloud and pulumi command groups the messages use (gcloud's and pulumi's references).
KNOWN = {
    "gcloud": {"auth", "projects", "billing", "services", "iam", "storage", "beta", "ai", "alpha", "builds"},
    "pulumi": {"config", "stack", "up", "destroy", "login", "preview", "refresh", "cancel", "state"},
}


def commands(text: str) -> list[str]:
    """Each command of `text`, in order."""
    found = []
    for quoted in re.findall(r"`([^`]+)`", text):
        for part in quoted.split(" && "):
            first = part.strip().split(" ", 1)[0]
            if first in COMMANDS:
                found.append(part.strip())
    return found


def check_cloud(command: str) -> None:
    """A gcloud or pulumi command parses as shell, names a known command group, and leaves no shell syntax
    unquoted but a placeholder."""
    words = shlex.split(command)
    assert words[0] in CLOUD, command
    assert len(words) > 1 and words[1] in KNOWN[words[0]], f"unknown {words[0]} command: {command}"
    assert shlex.split(shlex.join(words)) == words
    bare = PLACEHOLDER.sub("", re.sub(r"'[^']*'|\"[^\"]*\"", "", command))
    assert not re.search(r"[;|()$`\\!{}~]", bare.replace("&&", "")), f"unquoted shell syntax in {command!r}"


def project_copy(into: Path, stack_files: dict[str, str] | None = None) -> Path:
    """A project root: this project's code and stack files copied (so REPO_ROOT is the copy and what a
    command does stays there), its .venv linked, and `stack_files` (name -> text) written over."""
    root = into / "project"
    root.mkdir()
    for name in ("infra", "trainer", "examples", "policy"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for path in [
        *ROOT.glob("Pulumi*.yaml"),
        ROOT / "Makefile",
        ROOT / "pyproject.toml",
        ROOT / "constraints.txt",
    ]:
        shutil.copy2(path, root / path.name)  # mtimes kept: the .venv's stamp stays newer than them
    (root / ".venv").symlink_to(ROOT / ".venv")
    for name, text in (stack_files or {}).items():
        (root / name).write_text(text)
    return root


def run_local(command: str, root: Path, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    """`command` in a fresh shell (no inherited environment but PATH and HOME) from `root`, as printed."""
    words = shlex.split(command)
    assert words[0] in LOCAL, f"not the README's form (.venv/bin/python or make): {command}"
    assert not PLACEHOLDER.search(command), command
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    env["GOOGLE_APPLICATION_CREDENTIALS"] = "/nonexistent/no-credentials-in-tests.json"  # never a real API
    done = subprocess.run(
        ["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=timeout
    )
    output = done.stdout + done.stderr
    assert done.returncode != 127 and not NOT_RUN.search(output), f"{command}: {output[-2000:]}"
    return done
