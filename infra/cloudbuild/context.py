"""The trainer's build context as a deterministic .tar.gz: same files, same bytes, on any machine."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from infra.components.dockerfile import dockerfile_text
from infra.components.image import TRAINER_DIR, context_files, hash_entries

# Cloud Build runs `docker build` on the extracted archive, so the Dockerfile and .dockerignore travel with
# the files they select (Docker reads both even though .dockerignore keeps them out of COPY).
BUILD_INPUTS = ("Dockerfile", ".dockerignore")
# Entries carry fixed metadata: a checkout's mtimes, owners and umask must not change the archive's bytes.
_MTIME = 0
_FILE_MODE = 0o644


def archive_files(context: Path = TRAINER_DIR) -> list[str]:
    """What goes into the archive: the Docker build context plus the files that define the build.

    A directory without a Dockerfile gets the generated one (infra/components/dockerfile.py) under that name.
    """
    own = {f for f in BUILD_INPUTS if (context / f).is_file()}
    return sorted(set(context_files(context)) | own | {"Dockerfile"})


def archive_entries(context: Path = TRAINER_DIR) -> list[tuple[str, bytes]]:
    """(name, bytes) of every archive member, in order."""
    return [
        (
            relative,
            dockerfile_text(context).encode()
            if relative == "Dockerfile"
            else (context / relative).read_bytes(),
        )
        for relative in archive_files(context)
    ]


def archive_tag(context: Path = TRAINER_DIR) -> str:
    """The image tag: changes exactly when a file in the archive changes (the Dockerfile included)."""
    return hash_entries(archive_entries(context))[:16]


def _entry(relative: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(relative)
    info.size = size
    info.mtime = _MTIME
    info.mode = _FILE_MODE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def archive_bytes(context: Path = TRAINER_DIR) -> bytes:
    """A gzip'd tar of `archive_files`: sorted entries, zeroed mtimes and owners, no gzip file name."""
    tar_buffer = io.BytesIO()
    with tarfile.open(fileobj=tar_buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for relative, data in archive_entries(context):
            tar.addfile(_entry(relative, len(data)), io.BytesIO(data))
    gz_buffer = io.BytesIO()
    # filename="" and mtime=0: the gzip header otherwise records the file name and the current time.
    with gzip.GzipFile(filename="", mode="wb", fileobj=gz_buffer, mtime=0, compresslevel=9) as gz:
        gz.write(tar_buffer.getvalue())
    return gz_buffer.getvalue()


def write_archive(directory: Path, context: Path = TRAINER_DIR) -> Path:
    """Write the archive as `context-<tag>.tar.gz` under `directory` (left alone when already identical)."""
    data = archive_bytes(context)
    path = directory / f"context-{archive_tag(context)}.tar.gz"
    if not path.exists() or path.read_bytes() != data:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return path
