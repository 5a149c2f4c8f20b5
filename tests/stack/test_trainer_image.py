"""A trainer directory with only a requirements.txt: the generated Dockerfile, its archive and its image."""

from __future__ import annotations

import gzip
import io
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from infra.cloudbuild.context import archive_bytes, archive_files, archive_tag
from infra.components.dockerfile import BASE_IMAGE, dockerfile_text, generated
from infra.components.image import TRAINER_DIR
from tests.stack.conftest import ROOT

EXAMPLE = ROOT / "examples" / "housing"
HADOLINT = Path(sys.executable).parent / "hadolint"


def test_generated_dockerfile_passes_hadolint(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text(generated("housing"))
    result = subprocess.run([str(HADOLINT), str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_dockerfile_uses_the_built_in_base_runs_as_non_root_and_is_deterministic() -> None:
    text = generated("housing")
    builtin_base = re.search(r"^FROM (\S+)$", (TRAINER_DIR / "Dockerfile").read_text(), re.M)
    assert builtin_base and builtin_base.group(1) == BASE_IMAGE
    assert re.search(rf"^FROM {re.escape(BASE_IMAGE)}$", text, re.M)
    assert "COPY --chown=root:root . /app/housing" in text and "\nWORKDIR /app/housing\n" in text
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert "ENTRYPOINT" not in text  # trainerCommand is the job's command
    assert generated("housing") == text and dockerfile_text(EXAMPLE) == text
    assert dockerfile_text(TRAINER_DIR) == (TRAINER_DIR / "Dockerfile").read_text()


def _members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def test_the_archive_carries_the_generated_dockerfile_and_honours_dockerignore(tmp_path: Path) -> None:
    members = _members(archive_bytes(EXAMPLE))
    assert members["Dockerfile"] == generated("housing").encode()
    assert {"task.py", "data.py", "__init__.py", "requirements.txt", ".dockerignore"} <= set(members)
    assert not [name for name in members if name.endswith(".pyc") or "__pycache__" in name]
    assert sorted(members) == archive_files(EXAMPLE)
    # Same files elsewhere, same tag; the Dockerfile the stack would generate is part of what the tag hashes.
    copy = tmp_path / "housing"
    copy.mkdir()
    for name in archive_files(EXAMPLE):
        if name != "Dockerfile":
            (copy / name).write_bytes((EXAMPLE / name).read_bytes())
    assert archive_tag(copy) == archive_tag(EXAMPLE)
    (copy / "Dockerfile").write_text(generated("housing") + "# edited\n")
    assert archive_tag(copy) != archive_tag(EXAMPLE)


def test_docker_builds_the_directory_with_the_generated_dockerfile() -> None:
    from tests.stack.conftest import run_stack

    run = run_stack(
        "dev",
        imageBuilder="docker",
        trainerDir="examples/housing",
        trainerCommand=["python", "-m", "housing.task"],
        dataSource="none",
    )
    (image,) = run.by_type("docker-build:index:Image")
    assert image.inputs["context"] == {"location": str(EXAMPLE)}
    assert image.inputs["dockerfile"] == {"inline": generated("housing")}
    (builtin,) = run_stack("dev", imageBuilder="docker").by_type("docker-build:index:Image")
    assert builtin.inputs["dockerfile"] == {"location": str(TRAINER_DIR / "Dockerfile")}
