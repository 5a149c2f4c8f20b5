"""The context archive: the Docker build context of trainer/, byte-identical for identical content."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from infra.cloudbuild import context
from infra.components.image import TRAINER_DIR, context_files


@pytest.fixture
def trainer_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "trainer"
    shutil.copytree(TRAINER_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def members(data: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.getmembers()


def test_the_archive_holds_the_docker_context_and_the_build_files(trainer_copy: Path) -> None:
    (trainer_copy / "__pycache__").mkdir()
    (trainer_copy / "__pycache__" / "task.cpython-311.pyc").write_bytes(b"\0")
    (trainer_copy / "NOTES.md").write_text("ignored by .dockerignore")
    names = [m.name for m in members(context.archive_bytes(trainer_copy))]
    assert names == sorted(names)
    assert set(names) == set(context_files(trainer_copy)) | {"Dockerfile", ".dockerignore"}
    assert "task.py" in names and "requirements.txt" in names
    assert not [n for n in names if n.endswith((".pyc", ".md")) or "__pycache__" in n]


def test_entries_and_gzip_header_carry_no_time_owner_or_path(trainer_copy: Path) -> None:
    data = context.archive_bytes(trainer_copy)
    assert data[4:8] == b"\0\0\0\0", "gzip MTIME is zero"
    assert data[3] & 0x08 == 0, "no FNAME field in the gzip header"
    for member in members(data):
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (0, 0, 0, "", "")
        assert member.mode == 0o644 and member.isfile()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        assert tar.extractfile("task.py").read() == (trainer_copy / "task.py").read_bytes()


def test_same_content_same_bytes_across_runs_mtimes_and_modes(tmp_path: Path, trainer_copy: Path) -> None:
    first = context.archive_bytes(trainer_copy)
    other = tmp_path / "elsewhere" / "trainer"
    shutil.copytree(trainer_copy, other)
    for path in (p for p in other.rglob("*") if p.is_file()):
        os.utime(path, (1_000_000, 1_000_000))
        path.chmod(0o600)
    # A fresh interpreter, another directory, other mtimes and modes: the same bytes.
    code = "import sys; from pathlib import Path; from infra.cloudbuild.context import archive_bytes; "
    code += "sys.stdout.buffer.write(archive_bytes(Path(sys.argv[1])))"
    second = subprocess.run(
        [sys.executable, "-c", code, str(other)],
        capture_output=True,
        check=True,
        cwd=Path(__file__).parents[2],
    ).stdout
    assert second == first
    assert context.archive_tag(other) == context.archive_tag(trainer_copy)


@pytest.mark.parametrize("changed", ["task.py", "Dockerfile", "requirements.txt"])
def test_a_changed_trainer_file_changes_bytes_and_tag(trainer_copy: Path, changed: str) -> None:
    before, tag = context.archive_bytes(trainer_copy), context.archive_tag(trainer_copy)
    with (trainer_copy / changed).open("a") as f:
        f.write("\n# changed\n")
    assert context.archive_bytes(trainer_copy) != before
    assert context.archive_tag(trainer_copy) != tag


def test_an_ignored_file_changes_nothing(trainer_copy: Path) -> None:
    before = context.archive_bytes(trainer_copy)
    (trainer_copy / "README.md").write_text("docs are not in the image")
    assert context.archive_bytes(trainer_copy) == before


def test_write_archive_names_it_by_tag_and_keeps_identical_files(tmp_path: Path, trainer_copy: Path) -> None:
    path = context.write_archive(tmp_path / "out", trainer_copy)
    assert path.name == f"context-{context.archive_tag(trainer_copy)}.tar.gz"
    assert path.read_bytes() == context.archive_bytes(trainer_copy)
    mtime = path.stat().st_mtime_ns
    os.utime(path, ns=(mtime - 10**9, mtime - 10**9))
    assert context.write_archive(tmp_path / "out", trainer_copy) == path
    assert path.stat().st_mtime_ns == mtime - 10**9, "an identical archive is not rewritten"


def test_the_real_trainer_archive_is_small() -> None:
    """Kilobytes, not the gigabytes a local Docker push uploads (figure in docs/stack.md)."""
    data = context.archive_bytes()
    assert len(data) < 200_000
    assert gzip.decompress(data)  # a valid gzip stream
