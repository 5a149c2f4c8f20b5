"""The images' Python locks (`make lock`): every requirement hashed, at the version constraints.txt pins."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
# The platforms the images run on: linux/amd64, Python 3.11 (the project's floor) or 3.12 (the kill switch's
# python312 runtime). A requirement whose marker holds on none of them is never installed there.
IMAGE_ENVIRONMENTS = [
    {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "python_version": v,
        "python_full_version": f"{v}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "os_name": "posix",
    }
    for v in ("3.11", "3.12")
]


@dataclass(frozen=True)
class Locked:
    name: str
    version: str
    marker: str
    hashes: tuple[str, ...]


def make_variable(name: str) -> list[str]:
    """A `NAME := words` line of the Makefile, split."""
    match = re.search(rf"^{name} := (.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert match, f"Makefile has no {name}"
    return match.group(1).split()


def lock_of(requirements: str) -> Path:
    """`make lock` writes `x/requirements.lock` from `x/requirements.txt`."""
    return ROOT / f"{requirements.removesuffix('.txt')}.lock"


def parse_lock(text: str) -> list[Locked]:
    """Requirement entries of a `uv pip compile --generate-hashes` file (continuation lines joined)."""
    entries = re.sub(r"\s*\\\n\s*", " ", text)
    locked = []
    for line in entries.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+)(?: ; (.+?))?((?: --hash=\S+)*)\s*", line)
        assert match, f"not a pinned, hashed requirement: {line!r}"
        name, version, marker, hashes = match.groups()
        locked.append(Locked(canonicalize_name(name), version, marker or "", tuple(hashes.split())))
    return locked


def constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def installs_on_the_images(marker: str) -> bool:
    return not marker or any(Marker(marker).evaluate(env) for env in IMAGE_ENVIRONMENTS)


LOCK_INPUTS = make_variable("LOCK_INPUTS")


def test_the_locked_images() -> None:
    assert {"trainer/requirements.txt", "serving/requirements.txt", "infra/guard/requirements.txt"} <= set(
        LOCK_INPUTS
    )


@pytest.mark.parametrize("requirements", LOCK_INPUTS)
def test_every_requirement_is_hashed_at_the_version_constraints_pins(requirements: str) -> None:
    locked = parse_lock(lock_of(requirements).read_text())
    pins = constraints()
    assert locked
    for entry in locked:
        assert entry.hashes and all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in entry.hashes), (
            entry
        )
        if installs_on_the_images(entry.marker):
            assert pins.get(entry.name) == entry.version, (
                f"{requirements[:-4]}.lock has {entry.name}=={entry.version}, constraints.txt "
                f"{pins.get(entry.name)}: run `make lock`"
            )
    excluded = {canonicalize_name(n) for n in make_variable("LOCK_EXCLUDED")}
    assert not excluded & {e.name for e in locked}, (
        "tensorflow comes from the base image, never from the lock"
    )


@pytest.mark.parametrize("requirements", LOCK_INPUTS)
def test_the_lock_is_compiled_from_its_requirements(requirements: str) -> None:
    """Each requirement the input names is in the lock at the input's version: an edit needs `make lock`."""
    locked = {e.name: e.version for e in parse_lock(lock_of(requirements).read_text())}
    for line in (ROOT / requirements).read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            assert locked.get(canonicalize_name(name)) == version.strip(), f"{line}: run `make lock`"


def test_the_parser_refuses_an_unhashed_or_unpinned_entry() -> None:
    ok = "six==1.17.0 \\\n    --hash=sha256:" + "a" * 64 + "\n    # via x\n"
    assert parse_lock(ok) == [Locked("six", "1.17.0", "", ("--hash=sha256:" + "a" * 64,))]
    for bad in ("six==1.17.0\n", "six>=1.5 \\\n    --hash=sha256:" + "a" * 64 + "\n"):
        with pytest.raises(AssertionError):
            entry = parse_lock(bad)
            assert entry[0].hashes


def _wheel(directory: Path, name: str, requires: list[str]) -> Path:
    """A minimal pure-Python wheel (PEP 427): one module, METADATA, WHEEL and RECORD."""
    dist = f"{name}-1.0"
    files = {
        f"{name}.py": b"",
        f"{dist}.dist-info/METADATA": "\n".join(
            [
                "Metadata-Version: 2.1",
                f"Name: {name}",
                "Version: 1.0",
                *(f"Requires-Dist: {r}" for r in requires),
            ]
        ).encode()
        + b"\n",
        f"{dist}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([path, f"sha256={digest}", len(data)])
    writer.writerow([f"{dist}.dist-info/RECORD", "", ""])
    path = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in {**files, f"{dist}.dist-info/RECORD": record.getvalue().encode()}.items():
            wheel.writestr(member, data)
    return path


def _pip_install(venv: Path, index: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-index",
            "--find-links",
            str(index),
            "--no-cache-dir",
            "--disable-pip-version-check",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pip_installs_a_lock_only_by_hash_and_takes_what_the_lock_leaves_out_from_the_base(
    tmp_path: Path,
) -> None:
    """What the Dockerfiles rely on, with the real pip: a hash that does not match stops the install; a
    dependency the lock leaves out (tensorflow) is taken from what the base already has, and is refused,
    not fetched, when the base lacks it."""
    index = tmp_path / "index"
    index.mkdir()
    _wheel(index, "vt_base", [])
    app = _wheel(index, "vt_app", ["vt_base"])
    good = hashlib.sha256(app.read_bytes()).hexdigest()
    lock = tmp_path / "requirements.lock"

    def venv(name: str) -> Path:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / name)], check=True)
        return tmp_path / name

    base = venv("base")
    assert _pip_install(base, index, "vt_base==1.0").returncode == 0
    lock.write_text(f"vt-app==1.0 --hash=sha256:{'0' * 64}\n")
    tampered = _pip_install(base, index, "--require-hashes", "-r", str(lock))
    assert tampered.returncode != 0 and "DO NOT MATCH THE HASHES" in tampered.stderr, tampered.stderr
    lock.write_text(f"vt-app==1.0 --hash=sha256:{good}\n")
    installed = _pip_install(base, index, "--require-hashes", "-r", str(lock))
    assert installed.returncode == 0, installed.stderr
    assert "Requirement already satisfied: vt_base" in installed.stdout.replace("vt-base", "vt_base")
    bare = _pip_install(venv("bare"), index, "--require-hashes", "-r", str(lock))
    assert bare.returncode != 0 and "must have their versions pinned with ==" in bare.stderr, bare.stderr
