"""The stack's images, trainer/ and serving/: built by docker-build, tagged by content, pinned by digest."""

from __future__ import annotations

import ast
import fnmatch
import hashlib
from pathlib import Path
from typing import Any

import pulumi
import pulumi_docker_build as docker_build

from infra.components.dockerfile import dockerfile_text
from infra.components.options import children

TRAINER_DIR = Path(__file__).resolve().parents[2] / "trainer"
IMAGE_NAME = "trainer"
# The prediction server's build context (serving/Dockerfile), an image of its own: every file under trainer/
# feeds the trainer's tag, and a server change must not retrain the model.
SERVING_DIR = Path(__file__).resolve().parents[2] / "serving"
SERVING_IMAGE_NAME = "serving"
# What every image needs besides Python sources: changing these changes what data preparation runs on too.
BUILD_FILES = ("Dockerfile", "requirements.txt", "requirements.lock", ".dockerignore", "__init__.py")
DATA_ENTRY = "create_tfrecords.py"
_ALWAYS_IGNORED = ("__pycache__", "*.pyc", "*.pyo", ".pytest_cache")


def _ignored(relative: str, patterns: list[str]) -> bool:
    parts = relative.split("/")
    return any(fnmatch.fnmatch(part, p) for part in parts for p in _ALWAYS_IGNORED) or any(
        fnmatch.fnmatch(relative, p.rstrip("/")) or fnmatch.fnmatch(relative, p.rstrip("/") + "/*")
        for p in patterns
    )


def _dockerignore(context: Path) -> list[str]:
    path = context / ".dockerignore"
    if not path.exists():
        return []
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line.removeprefix("./") for line in lines if line and not line.startswith(("#", "!"))]


def hash_entries(entries: list[tuple[str, bytes]]) -> str:
    """SHA-256 over (relative path, bytes) in sorted order: identical trees give identical hashes."""
    digest = hashlib.sha256()
    for relative, data in sorted(entries):
        digest.update(relative.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


def hash_files(context: Path, files: list[str]) -> str:
    return hash_entries([(relative, (context / relative).read_bytes()) for relative in files])


def context_files(context: Path = TRAINER_DIR) -> list[str]:
    """Files that enter the Docker build context (.dockerignore and bytecode excluded)."""
    patterns = _dockerignore(context)
    return sorted(
        relative
        for path in context.rglob("*")
        if path.is_file() and not _ignored(relative := path.relative_to(context).as_posix(), patterns)
    )


def content_hash(context: Path = TRAINER_DIR) -> str:
    """Image tag: changes exactly when the build context changes."""
    return hash_files(context, context_files(context))[:16]


def _parse(source: str) -> ast.Module:
    """ast.parse, once more after CPython 3.11's spurious "AST constructor recursion depth mismatch"
    SystemError (python/cpython#106905; seen here under the mock engine's threads)."""
    try:
        return ast.parse(source)
    except SystemError:
        return ast.parse(source)


def _local_imports(module: Path, package: str) -> set[str]:
    """Sibling module file names that `module` imports from its own package (absolute or relative)."""
    names: set[str] = set()
    for node in ast.walk(_parse(module.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[1] for a in node.names if a.name.startswith(f"{package}.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1 or node.module == package:
                base = node.module if node.level == 1 else None
                names |= {base.split(".")[0]} if base else {a.name for a in node.names}
            elif node.level == 0 and node.module and node.module.startswith(f"{package}."):
                names.add(node.module.split(".")[1])
    return {f"{name}.py" for name in names}


def data_code_files(context: Path = TRAINER_DIR, entry: str = DATA_ENTRY) -> list[str]:
    """The data-preparation entry point, the package modules it imports (transitively) and the build files."""
    seen: set[str] = set()
    pending = [entry]
    while pending:
        name = pending.pop()
        if name in seen or not (context / name).is_file():
            continue
        seen.add(name)
        pending.extend(_local_imports(context / name, context.name))
    return sorted(seen | {f for f in BUILD_FILES if (context / f).is_file()})


def data_code_hash(context: Path = TRAINER_DIR) -> str:
    """Changes only when what data preparation runs changes, not when training code does."""
    return hash_files(context, data_code_files(context))[:16]


def digest_ref(repository_url: str, digest: str, image_name: str = IMAGE_NAME) -> str:
    """`<repository>/<image>@sha256:...`: the one unambiguous reference to a pushed image."""
    return f"{repository_url}/{image_name}@{digest}"


def serving_tag(context: Path = SERVING_DIR) -> str:
    """The serving image's tag: changes exactly when serving/'s build context does (never with trainer/)."""
    return content_hash(context)


class BuiltImage(pulumi.ComponentResource):
    """A directory built for linux/amd64 with pulumi-docker-build and pushed under its content tag (plus
    `extra_tags`); `ref` (repository/<image>@sha256:...) pins what uses it to the exact image."""

    def __init__(
        self,
        type_name: str,
        name: str,
        *,
        repository_url: str,
        image_name: str,
        context: Path,
        labels: dict[str, str],
        extra_tags: tuple[str, ...] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(type_name, name, None, opts)
        self.tag = content_hash(context)
        self.uri = f"{repository_url}/{image_name}:{self.tag}"
        self.image = docker_build.Image(
            "image",
            context={"location": str(context)},
            # A directory without a Dockerfile builds from the generated one (infra/components/dockerfile.py).
            dockerfile=(
                {"location": str(context / "Dockerfile")}
                if (context / "Dockerfile").is_file()
                else {"inline": dockerfile_text(context)}
            ),
            platforms=[docker_build.Platform.LINUX_AMD64],
            tags=[self.uri, *(f"{repository_url}/{image_name}:{tag}" for tag in extra_tags)],
            push=True,
            # A preview (e.g. CI on a pull request) needs no Docker engine or registry credentials.
            build_on_preview=False,
            labels=labels,
            opts=children(self, opts),
        )
        self.digest = self.image.digest
        # Digest form alone: docker-build's own `ref` is tag@digest, which some consumers resolve by tag.
        self.ref = self.digest.apply(lambda digest: digest_ref(repository_url, digest, image_name))
        # docker-build reports no base image or builder digest: a run of this image records none.
        self.sources: pulumi.Output[dict[str, Any]] | None = None
        self.register_outputs({"ref": self.ref, "digest": self.digest, "tag": self.tag})


class TrainerImage(BuiltImage):
    """trainer/ (or the stack's trainerDir), pushed under a content tag and a data-code tag.

    The data-preparation job uses the `data_uri` tag, which moves only between builds whose data code,
    requirements and Dockerfile are byte-identical: so a training-code change does not rerun data preparation.
    """

    def __init__(
        self,
        name: str,
        *,
        repository_url: str,
        labels: dict[str, str],
        context: Path = TRAINER_DIR,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        data_tag = f"data-{data_code_hash(context)}"
        # The type token is part of every existing stack's URNs: changing it would replace the image.
        super().__init__(
            "vertex-training:stack:TrainerImage",
            name,
            repository_url=repository_url,
            image_name=IMAGE_NAME,
            context=context,
            labels=labels,
            extra_tags=(data_tag,),
            opts=opts,
        )
        self.data_uri = f"{repository_url}/{IMAGE_NAME}:{data_tag}"


class ServingImage(BuiltImage):
    """serving/: the prediction server's image, which the model version and the batch job run."""

    def __init__(
        self,
        name: str,
        *,
        repository_url: str,
        labels: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            "vertex-training:stack:ServingImage",
            name,
            repository_url=repository_url,
            image_name=SERVING_IMAGE_NAME,
            context=SERVING_DIR,
            labels=labels,
            opts=opts,
        )
