"""Trainer keys: which code the training job runs (trainerDir, trainerCommand, trainerArgs) and their checks.

The defaults are the built-in trainer (trainer/); any directory that follows docs/trainer-contract.md works
the same way. Arguments are templates: `{name}` placeholders are filled in by the stack
(infra/workloads/jobs.py).
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass, fields
from pathlib import Path

from infra.config.data import DataConfig
from infra.config.hyperparameters import Hyperparameters
from infra.config.reader import NAMESPACE, ConfigError, Reader, positive, set_fix

KEYS = ("trainerDir", "trainerCommand", "trainerArgs", "checkpointMinutes")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = "trainer"
DEFAULT_COMMAND = ("python", "-m", "trainer.task")
# The built-in trainer's arguments; its model and TensorBoard dirs come from AIP_MODEL_DIR and friends.
DEFAULT_ARGS = (
    "--data-dir", "{data_dir}",
    "--checkpoint-dir", "{checkpoint_dir}",
    "--image-size", "{image_size}",
    "--epochs", "{epochs}",
    "--fine-tune-epochs", "{fine_tune_epochs}",
    "--batch-size", "{batch_size}",
    "--learning-rate", "{learning_rate}",
    "--weights", "{weights}",
    "--mixed-precision", "{mixed_precision}",
    "--backbone", "{backbone}",
)  # fmt: skip
NUM_CLASSES_ARGS = ("--num-classes", "{num_classes}")
# Passed only when checkpointMinutes is set: unset, the trainer's own default applies (trainer/checkpoints.py)
# and the job's arguments stay as they were before the key existed.
CHECKPOINT_MINUTES_ARGS = ("--checkpoint-minutes", "{checkpoint_minutes}")
# A backup at least once a week (Vertex AI's longest job timeout) is the most a cadence can mean.
MAX_CHECKPOINT_MINUTES = 7 * 24 * 60
# What the stack fills in: its paths, then every hyperparameter by its field name, then the data's image size.
PATH_PLACEHOLDERS = ("data_dir", "bucket", "checkpoint_dir")
HYPERPARAMETER_PLACEHOLDERS = tuple(f.name for f in fields(Hyperparameters))
PLACEHOLDERS = (*PATH_PLACEHOLDERS, *HYPERPARAMETER_PLACEHOLDERS, "image_size", "checkpoint_minutes")
_ENTRYPOINT = re.compile(r"^\s*ENTRYPOINT\s+(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
# How Docker runs a shell-form ENTRYPOINT (its Dockerfile reference).
SHELL_FORM = ("/bin/sh", "-c")
# Cloud Storage FUSE: Vertex mounts gs://BUCKET at /gcs/BUCKET inside the job, so such paths are not local.
GCS_FUSE_PREFIX = "/gcs/"


@dataclass(frozen=True)
class TrainerConfig:
    """The training job's code: an absolute directory, its command and argument templates."""

    dir: Path = PROJECT_ROOT / DEFAULT_DIR
    command: tuple[str, ...] = DEFAULT_COMMAND
    args: tuple[str, ...] = DEFAULT_ARGS
    builtin: bool = True  # trainer/ itself: what it reports (tuning metrics) is known
    checkpoint_minutes: float | None = None  # None: the trainer's default cadence

    @property
    def dockerfile(self) -> Path | None:
        """The directory's own Dockerfile; None: the stack generates one (infra/components/dockerfile.py)."""
        path = self.dir / "Dockerfile"
        return path if path.is_file() else None


def default_args(hp: Hyperparameters, checkpoint_minutes: float | None = None) -> tuple[str, ...]:
    return (
        *DEFAULT_ARGS,
        *(NUM_CLASSES_ARGS if hp.num_classes else ()),
        *(CHECKPOINT_MINUTES_ARGS if checkpoint_minutes is not None else ()),
    )


def read_checkpoint_minutes(read: Reader) -> float | None:
    minutes = read.number("checkpointMinutes", None, float, "10")
    if minutes is not None:
        positive("checkpointMinutes", minutes, "10", maximum=MAX_CHECKPOINT_MINUTES)
    return minutes


def placeholders(template: str, key: str = "trainerArgs") -> list[str]:
    """The `{name}` fields of one argument; malformed braces and format specs are config errors."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise ConfigError(key, f"{template!r}: {error}", "write a literal brace as {{ or }}") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if spec or conversion or not name:
            raise ConfigError(key, f"{template!r} has a placeholder with a format", "write {name} only")
        names.append(name)
    return names


@dataclass(frozen=True)
class ArgumentUse:
    """Where trainerArgs pass a placeholder: the templates that make up the argument (a separate flag
    included), and the flag when the value is exactly the placeholder (`--flag {x}` or `--flag={x}`)."""

    indices: tuple[int, ...]
    flag: str | None
    flagged: bool  # False: a positional argument, which cannot be left out or set by name


def argument_uses(templates: tuple[str, ...], name: str) -> list[ArgumentUse]:
    whole = "{" + name + "}"
    uses = []
    flag: str | None
    for i, template in enumerate(templates):
        if name not in placeholders(template):
            continue
        if template.startswith("-") and "=" in template:
            flag, value = template.split("=", 1)
            uses.append(ArgumentUse((i,), flag.lstrip("-") if value == whole else None, True))
        elif i and templates[i - 1].startswith("-") and not placeholders(templates[i - 1]):
            flag = templates[i - 1].lstrip("-") if template == whole else None
            uses.append(ArgumentUse((i - 1, i), flag, True))
        else:
            uses.append(ArgumentUse((i,), None, False))
    return uses


def entrypoint(dockerfile: Path) -> tuple[str, ...] | None:
    """The last ENTRYPOINT: exec form (a JSON list) as is, shell form as Docker runs it (`sh -c <line>`)."""
    matches = _ENTRYPOINT.findall(dockerfile.read_text())
    if not matches:
        return None
    try:
        value = json.loads(matches[-1])
    except json.JSONDecodeError:
        return (*SHELL_FORM, matches[-1])
    return tuple(str(v) for v in value) if isinstance(value, list) else (*SHELL_FORM, matches[-1])


def entrypoint_conflict(trainer: TrainerConfig) -> str | None:
    """A warning when trainerCommand differs from the Dockerfile's ENTRYPOINT: on Vertex the command wins."""
    dockerfile = trainer.dockerfile
    declared = entrypoint(dockerfile) if dockerfile else None
    if declared is None or declared == trainer.command:
        return None
    return (
        f"{NAMESPACE}:trainerCommand {list(trainer.command)} differs from the ENTRYPOINT {list(declared)} of "
        f"{dockerfile}: trainerCommand wins (a Vertex job's command replaces the image's ENTRYPOINT, and the "
        "local runner runs trainerCommand). Remove trainerCommand to run the ENTRYPOINT."
    )


def _directory(read: Reader, root: Path) -> Path:
    relative = read.str("trainerDir", DEFAULT_DIR, "examples/housing")
    fix = (
        "name a directory inside the project, e.g. "
        "`pulumi config set vertex-training:trainerDir examples/housing`, "
        "or `pulumi config rm vertex-training:trainerDir` for the built-in trainer"
    )
    if Path(relative).expanduser().is_absolute():
        raise ConfigError("trainerDir", f"{relative!r} must be relative to the project root ({root})", fix)
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ConfigError("trainerDir", f"{relative!r} is outside the project ({root})", fix)
    if not path.is_dir():
        raise ConfigError("trainerDir", f"{relative!r} is not a directory under {root}", fix)
    if not (path / "Dockerfile").is_file() and not (path / "requirements.txt").is_file():
        raise ConfigError(
            "trainerDir",
            f"{relative!r} has neither a Dockerfile nor a requirements.txt",
            "add a requirements.txt (the stack builds it on the built-in trainer's TensorFlow base) "
            "or a Dockerfile (used as it is)",
        )
    return path


def _strings(read: Reader, key: str, default: tuple[str, ...], example: tuple[str, ...]) -> tuple[str, ...]:
    values = read.list(key, default, example)
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, str | int | float)]
    if bad:
        raise ConfigError(
            key, f"expected a list of strings, got {bad!r} in it", f"quote them: {json.dumps(list(example))}"
        )
    return tuple(str(v) for v in values)


def _check_local_paths(key: str, values: tuple[str, ...], root: Path) -> None:
    """A cloud job runs in its container: a path on this machine does not exist there."""
    for value in values:
        for part in value.split("="):
            path = part.strip()
            if not path.startswith(("/", "~")) or path.startswith(GCS_FUSE_PREFIX):
                continue
            # Only paths that are surely this machine's: a container path such as /app/x is fine.
            local = Path(path).expanduser()
            mine = [root, *([Path.home()] if Path.home() != Path("/") else [])]
            if any(local.is_relative_to(place) for place in mine):
                raise ConfigError(
                    key,
                    f"{value!r} names {path}, a path on this machine that a cloud job cannot read",
                    "upload it (`gcloud storage cp`) and pass a gs:// URI (or /gcs/<bucket>/...), or use "
                    "{bucket} / {data_dir}",
                )


def _check_placeholders(
    args: tuple[str, ...], hp: Hyperparameters, data: DataConfig, checkpoint_minutes: float | None
) -> None:
    for arg in args:
        for name in placeholders(arg):
            if name not in PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                raise ConfigError(
                    "trainerArgs",
                    f"{{{name}}} in {arg!r} is not a placeholder the stack knows",
                    f"use one of {known} (a literal brace: {{{{ }}}})",
                )
            if name in HYPERPARAMETER_PLACEHOLDERS and getattr(hp, name) is None:
                raise ConfigError("trainerArgs", f"{{{name}}} is used but not set", "set it or remove it")
            if name == "checkpoint_minutes" and checkpoint_minutes is None:
                raise ConfigError(
                    "trainerArgs",
                    "{checkpoint_minutes} is used but not set",
                    set_fix("checkpointMinutes", "10"),
                )
            if name == "data_dir" and data.source == "none" and not data.dir:
                raise ConfigError(
                    "trainerArgs",
                    "{data_dir} is used but dataSource is none and no dataDir is set",
                    "run `pulumi config set vertex-training:dataDir gs://my-bucket/data` or remove it",
                )


def read_trainer(
    read: Reader, hp: Hyperparameters, data: DataConfig, runner: str, root: Path = PROJECT_ROOT
) -> TrainerConfig:
    """Defaults: the built-in trainer's for trainer/, else the directory's ENTRYPOINT and no arguments."""
    directory = _directory(read, root)
    builtin = directory == (root / DEFAULT_DIR).resolve()
    dockerfile = directory / "Dockerfile"
    declared = entrypoint(dockerfile) if dockerfile.is_file() else None
    default_command = DEFAULT_COMMAND if builtin else declared or ()
    command = _strings(read, "trainerCommand", default_command, ("python", "-m", "mytrainer.task"))
    if not command:
        raise ConfigError(
            "trainerCommand",
            f"is required: {directory} has no Dockerfile ENTRYPOINT to run",
            "write it as a YAML list, e.g. trainerCommand: [python, -m, mytrainer.task]",
        )
    minutes = read_checkpoint_minutes(read)
    defaults = default_args(hp, minutes) if builtin else ()
    args = _strings(read, "trainerArgs", defaults, ("--data-dir", "{data_dir}"))
    if args and declared and declared[:2] == SHELL_FORM and command == declared:
        # `sh -c STRING arg...` puts the arguments in $0, $1...: STRING never sees them (POSIX sh).
        raise ConfigError(
            "trainerArgs",
            f"{dockerfile} has a shell-form ENTRYPOINT ({declared[2]!r}), which drops every argument",
            "set vertex-training:trainerCommand (a YAML list), or write the ENTRYPOINT in exec form "
            '(["python", "-m", "mytrainer.task"])',
        )
    _check_placeholders(args, hp, data, minutes)
    if runner == "vertex":
        _check_local_paths("trainerCommand", command, root)
        _check_local_paths("trainerArgs", args, root)
    if data.source != "none" and not builtin:
        # The data job runs the built-in trainer's create_tfrecords from its own image; another trainerDir's
        # image holds other code (a copy of the module would be neither run nor hashed as the job ran it).
        raise ConfigError(
            "dataSource",
            f"{data.source} prepares TFRecords with the built-in trainer ({DEFAULT_DIR}/), but trainerDir is "
            f"{directory.name}/",
            "run `pulumi config set vertex-training:dataSource none` (your trainer reads its own data), or "
            "remove vertex-training:trainerDir to train the built-in trainer",
        )
    return TrainerConfig(
        dir=directory, command=command, args=args, builtin=builtin, checkpoint_minutes=minutes
    )
