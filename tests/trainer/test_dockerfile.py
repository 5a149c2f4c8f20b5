"""The trainer image's Dockerfile passes hadolint and keeps the properties the mission asks for."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from infra.components.dockerfile import base_images
from tests.trainer.helpers import REPO

DOCKERFILE = REPO / "trainer" / "Dockerfile"
HADOLINT = Path(sys.executable).parent / "hadolint"


def test_hadolint_passes() -> None:
    result = subprocess.run([str(HADOLINT), str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pinned_cuda_base_non_root_entrypoint() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM tensorflow/tensorflow:2\.21\.0-gpu$", text, re.M)
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert 'ENTRYPOINT ["python", "-m", "trainer.task"]' in text
    assert "COPY --chown=root:root . /app/trainer" in text


def test_requirements_are_pinned_and_do_not_reinstall_tensorflow() -> None:
    lines = [
        ln
        for ln in (REPO / "trainer" / "requirements.txt").read_text().splitlines()
        if ln and not ln.startswith("#")
    ]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", ln) for ln in lines)
    assert not any(ln.lower().startswith(("tensorflow==", "tensorflow-gpu", "tf-nightly")) for ln in lines)
    constraints = (REPO / "constraints.txt").read_text().lower()
    for ln in lines:
        name = ln.split("==")[0].lower()
        if f"\n{name}==" in f"\n{constraints}":
            assert f"\n{ln.lower()}\n" in f"\n{constraints}\n", f"{ln} disagrees with constraints.txt"
    assert "**/__pycache__" in (REPO / "trainer" / ".dockerignore").read_text()


def test_packages_install_only_from_the_hashed_lock() -> None:
    """pip gets the lock (`make lock`; tests/ci/test_locks.py checks it), never the unhashed requirements."""
    text = DOCKERFILE.read_text()
    installs = re.findall(r"pip install ([^&\n]*)", text)
    assert installs == ["--no-cache-dir --require-hashes -r /app/trainer/requirements.lock \\"], installs
    assert "COPY requirements.lock /app/trainer/requirements.lock" in text


def test_the_base_images_a_build_records() -> None:
    """Every FROM image a build pulls, once: not scratch, not an earlier stage, not one an ARG names."""
    assert base_images(DOCKERFILE.read_text()) == ["tensorflow/tensorflow:2.21.0-gpu"]
    text = (
        "ARG BASE\nFROM --platform=linux/amd64 python:3.12 AS build\nFROM build AS test\nFROM scratch\n"
        "FROM $BASE\nfrom gcr.io/p/i@sha256:" + "a" * 64 + " as final\nFROM python:3.12\n"
    )
    assert base_images(text) == ["python:3.12", "gcr.io/p/i@sha256:" + "a" * 64]
