"""`make setup` picks a Python the project supports (3.11 or 3.12) by name, or stops naming what it needs.

make runs with a PATH that holds only fake interpreters: each prints the version it stands for, as
`python -c 'import sys; print(...)'` would."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.stack.conftest import ROOT

MAKE = shutil.which("make")


def fake_pythons(tmp_path: Path, **versions: str) -> Path:
    """Executables named like interpreters (python3_12 -> python3.12) printing their version."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, version in versions.items():
        path = bin_dir / name.replace("_", ".")
        path.write_text(f"#!/bin/sh\necho {version}\n")
        path.chmod(0o755)
    return bin_dir


def make(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": str(bin_dir)}
    return subprocess.run(
        [MAKE, "--no-print-directory", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    ("versions", "chosen"),
    [
        ({"python3": "3.12"}, "Python 3.12: python3"),
        ({"python3": "3.11", "python3_12": "3.12"}, "Python 3.11: python3"),
        ({"python3": "3.13", "python3_12": "3.12", "python3_11": "3.11"}, "Python 3.12: python3.12"),
        ({"python3": "3.10", "python3_11": "3.11"}, "Python 3.11: python3.11"),
    ],
)
def test_python3_when_supported_else_python3_12_else_python3_11(tmp_path, versions, chosen) -> None:
    bin_dir = fake_pythons(tmp_path, **versions)
    checked = make(bin_dir, "check-python")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == chosen
    interpreter = chosen.split(": ")[1]
    recipe = make(bin_dir, "-n", "setup", f"VENV={tmp_path}/venv").stdout
    assert f"{interpreter} -m venv {tmp_path}/venv" in recipe.splitlines()


def test_no_supported_python_stops_naming_the_versions_and_what_it_found(tmp_path) -> None:
    bin_dir = fake_pythons(tmp_path, python3="3.13")
    checked = make(bin_dir, "check-python")
    assert checked.returncode != 0 and checked.stdout == ""
    assert "make setup needs Python 3.11 or 3.12 (pyproject.toml: >=3.11,<3.13)" in checked.stderr
    assert "Found python3: 3.13; python3.12: none; python3.11: none;" in checked.stderr
    assert "make setup PYTHON=/path/to/python3.12" in checked.stderr


def test_a_given_python_of_another_version_is_refused(tmp_path) -> None:
    bin_dir = fake_pythons(tmp_path, python3_13="3.13", python3_12="3.12")
    checked = make(bin_dir, "check-python", "PYTHON=python3.13")
    assert checked.returncode != 0
    assert "python3.12: 3.12;" in checked.stderr and "python3.13: 3.13;" in checked.stderr


def test_the_venv_is_only_made_after_the_check() -> None:
    recipe = (ROOT / "Makefile").read_text().split("$(STAMP): pyproject.toml constraints.txt\n", 1)[1]
    assert recipe.splitlines()[:2] == [
        '\t@$(MAKE) --no-print-directory check-python PYTHON="$(PYTHON)"',
        "\t$(PYTHON) -m venv $(VENV)",
    ]


def fake_venv(tmp_path: Path, version: str | None) -> Path:
    """A .venv whose bin/python prints `version` (None: an interpreter that no longer runs)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    if version is None:
        python.symlink_to(tmp_path / "deleted-python3.12")
    else:
        python.write_text(f"#!/bin/sh\necho {version}\n")
        python.chmod(0o755)
    (venv / ".installed").touch()
    return venv


@pytest.mark.parametrize(
    ("version", "shown"), [("3.13", "Python 3.13"), (None, "a Python that no longer runs")]
)
def test_an_existing_venv_of_another_python_stops_setup_naming_it(tmp_path, version, shown) -> None:
    venv = fake_venv(tmp_path, version)
    bin_dir = fake_pythons(tmp_path, python3="3.12")
    checked = make(bin_dir, "setup", f"VENV={venv}")
    assert checked.returncode != 0
    assert (
        f"{venv} was made with {shown} ({venv}/bin/python); this project needs 3.11 or 3.12" in checked.stderr
    )
    assert f"rm -rf {venv} && make setup" in checked.stderr


def test_an_existing_venv_of_a_supported_python_is_used_as_it_is(tmp_path) -> None:
    venv = fake_venv(tmp_path, "3.11")
    # The stamp is newer than pyproject.toml and constraints.txt: nothing to make.
    bin_dir = fake_pythons(tmp_path, python3="3.12")
    checked = make(bin_dir, "setup", f"VENV={venv}")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == "" and checked.stderr == ""
