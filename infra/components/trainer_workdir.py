"""Where a trainer's command runs: its image's WORKDIR, and the directory of this project that stands for it.

The local runner starts a job's replicas there, so `python train.py` or `python -m <module>` finds the same
files as in the image. The image's WORKDIR maps back through the instruction that copies the build context's
root (`COPY . <dest>`): the trainer directory is `<dest>`, so WORKDIR `<dest>/src` is `<trainer dir>/src` and
WORKDIR `<dest>/..` its parent.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_CONTINUATION = re.compile(r"\\\s*\n")
_CONTEXT_ROOT = (".", "./")


@dataclass(frozen=True)
class ImageLayout:
    """The final stage's WORKDIR and where it copies the build context's root (None: not set / not copied)."""

    workdir: PurePosixPath | None
    context_dir: PurePosixPath | None


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction, continuation lines joined and comments left out."""
    lines = _CONTINUATION.sub(" ", dockerfile).splitlines()
    result = []
    for line in lines:
        words = line.strip().split(None, 1)
        if words and not words[0].startswith("#"):
            result.append((words[0].upper(), words[1] if len(words) > 1 else ""))
    return result


def _copy_words(arguments: str) -> list[str] | None:
    """A COPY/ADD's sources and destination, without flags; None when it copies from another stage."""
    if arguments.lstrip().startswith("["):
        try:
            words = [str(w) for w in json.loads(arguments)]
        except json.JSONDecodeError:
            return None
    else:
        words = shlex.split(arguments)
    if any(w.startswith("--from") for w in words):
        return None
    return [w for w in words if not w.startswith("--")]


def layout(dockerfile: str) -> ImageLayout:
    """The last stage's layout; relative WORKDIR and COPY destinations resolve against WORKDIR."""
    workdir: PurePosixPath | None = None
    context: PurePosixPath | None = None
    for instruction, arguments in _instructions(dockerfile):
        if instruction == "FROM":
            workdir, context = None, None
        elif instruction == "WORKDIR":
            workdir = PurePosixPath("/") / (workdir or "/") / arguments.strip().strip("\"'")
        elif instruction in ("COPY", "ADD"):
            words = _copy_words(arguments)
            if words and len(words) >= 2 and any(source in _CONTEXT_ROOT for source in words[:-1]):
                context = PurePosixPath("/") / (workdir or "/") / words[-1]
    return ImageLayout(
        PurePosixPath(os.path.normpath(workdir)) if workdir else None,
        PurePosixPath(os.path.normpath(context)) if context else None,
    )


def local_workdir(trainer_dir: Path, dockerfile: str, root: Path) -> Path:
    """The directory under `root` that the image's WORKDIR stands for; the trainer directory itself when the
    Dockerfile does not say (no WORKDIR, no copy of the context's root) or points outside `root`."""
    image = layout(dockerfile)
    if image.workdir is None or image.context_dir is None:
        return trainer_dir
    local = (trainer_dir / os.path.relpath(image.workdir, image.context_dir)).resolve()
    if local.is_relative_to(root.resolve()) and local.is_dir():
        return local
    return trainer_dir
