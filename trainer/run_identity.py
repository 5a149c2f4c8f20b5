"""What a training run is (data, backbone, image size, classes, hyperparameters); where its checkpoints go.

Each run keeps its checkpoints in a folder of its own under the checkpoint dir, named by a hash of its
settings (`run-<hash>/`, those settings in `run-settings.json`). A restart of the same run (a restarted or
preempted Vertex job, the same command again) computes the same name and resumes there; a run with other
settings in the same dirs gets another folder and starts fresh, with one line naming what differs from the
run before it. Another run's weights are never loaded, whatever its class count or shapes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import posixpath
from dataclasses import asdict, dataclass, fields

import tensorflow as tf

from trainer.distribute import Role
from trainer.metadata import Metadata
from trainer.outputs import write_dir

SETTINGS_FILE = "run-settings.json"
RUN_PREFIX = "run-"
# Checkpoint folders the trainer wrote before runs had folders of their own (their settings are unknown).
LEGACY_PREFIXES = ("done-", "backup-")
# How many differing settings the line about another run names (the rest as a count).
SHOWN_DIFFERENCES = 6


@dataclass(frozen=True)
class RunSettings:
    """Everything that makes two runs' checkpoints interchangeable; places (model, log dirs) are not in it."""

    data_dir: str
    data_fingerprint: str  # metadata.json's: another conversion of the images is other data
    image_size: int
    class_names: tuple[str, ...]
    backbone: str
    weights: str
    epochs: int
    fine_tune_epochs: int
    batch_size: int  # per replica, as passed
    learning_rate: float  # per replica, as passed
    mixed_precision: str  # the flag (auto, on, off): float32 variables either way, so not the outcome

    def run_id(self) -> str:
        """A name for the run's checkpoint folder: the same settings always give the same name."""
        text = json.dumps(asdict(self), sort_keys=True)
        return RUN_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:12]

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "class_names": list(self.class_names)}

    @classmethod
    def from_json(cls, value: object) -> RunSettings | None:
        """The settings a run recorded; None for a file this version cannot read."""
        if not isinstance(value, dict) or {f.name for f in fields(cls)} != set(value):
            return None
        try:
            return cls(**{**value, "class_names": tuple(value["class_names"])})
        except TypeError:
            return None


@dataclass(frozen=True)
class OtherRun:
    """A run that left checkpoints in the same checkpoint dir: its folder and, if readable, its settings."""

    folder: str
    settings: RunSettings | None
    written: float  # seconds since the epoch (its settings file's, else its folder's, modification time)


def settings_for(args: argparse.Namespace, meta: Metadata) -> RunSettings:
    """The run `python -m trainer.task` was asked for (its parsed arguments) on the data it reads."""
    return RunSettings(
        data_dir=place(args.data_dir),
        data_fingerprint=meta.fingerprint,
        image_size=meta.image_size,
        class_names=tuple(meta.class_names),
        backbone=args.backbone,
        weights=args.weights,
        epochs=args.epochs,
        fine_tune_epochs=args.fine_tune_epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        mixed_precision=args.mixed_precision,
    )


def run_dir(checkpoint_dir: str, settings: RunSettings) -> str:
    return posixpath.join(checkpoint_dir, settings.run_id())


def place(path: str) -> str:
    """A path as a run names it: local paths absolute, no trailing slash (the same data, the same name)."""
    path = path.rstrip("/") or "/"
    return path if "://" in path else os.path.abspath(path)


def differences(old: RunSettings, new: RunSettings) -> list[str]:
    """`name old -> new` for each setting that differs, in the dataclass's order."""
    changed = []
    for field in fields(RunSettings):
        before, after = getattr(old, field.name), getattr(new, field.name)
        if before != after:
            shown = (list(before), list(after)) if field.name == "class_names" else (before, after)
            changed.append(f"{field.name} {shown[0]} -> {shown[1]}")
    return changed


def other_runs(checkpoint_dir: str, own: str) -> list[OtherRun]:
    """The checkpoint dir's other runs, newest first (a folder from before run folders counts as one)."""
    if not tf.io.gfile.isdir(checkpoint_dir):
        return []
    found: list[OtherRun] = []
    for entry in sorted(name.rstrip("/") for name in tf.io.gfile.listdir(checkpoint_dir)):
        folder = posixpath.join(checkpoint_dir, entry)
        if entry == own or not tf.io.gfile.isdir(folder):
            continue
        if entry.startswith(RUN_PREFIX):
            settings_path = posixpath.join(folder, SETTINGS_FILE)
            settings = read_settings(settings_path)
            found.append(OtherRun(folder, settings, _modified(settings_path, folder)))
        elif entry.startswith(LEGACY_PREFIXES):
            found.append(OtherRun(folder, None, _modified(folder, folder)))
    return sorted(found, key=lambda run: run.written, reverse=True)


def _modified(path: str, fallback: str) -> float:
    for candidate in (path, fallback):
        try:
            return tf.io.gfile.stat(candidate).mtime_nsec / 1e9
        except tf.errors.OpError:
            continue
    return 0.0


def read_settings(path: str) -> RunSettings | None:
    try:
        with tf.io.gfile.GFile(path) as f:
            return RunSettings.from_json(json.load(f))
    except (tf.errors.OpError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def describe_others(checkpoint_dir: str, settings: RunSettings, others: list[OtherRun]) -> str:
    """The one line a run logs when it starts fresh beside other runs' checkpoints."""
    newest = others[0]
    if newest.settings is None:
        what = "a run that recorded no settings (an earlier version)"
    else:
        changed = differences(newest.settings, settings)
        more = f" and {len(changed) - SHOWN_DIFFERENCES} more" if len(changed) > SHOWN_DIFFERENCES else ""
        what = f"another run ({', '.join(changed[:SHOWN_DIFFERENCES])}{more})"
    count = f"; {len(others) - 1} older run(s) there too" if len(others) > 1 else ""
    return (
        f"{newest.folder} holds the checkpoints of {what}{count}: not loaded. This run starts fresh in "
        f"{run_dir(checkpoint_dir, settings)}, where the same command resumes it. Delete the other run's "
        "folder when you no longer need it, or give each run its own --checkpoint-dir"
    )


def start(checkpoint_dir: str, settings: RunSettings, role: Role) -> tuple[str, str | None]:
    """The run's own checkpoint folder, with its settings recorded there (by the chief), and the line to log
    when other runs' checkpoints share the checkpoint dir (None when none do, or this run is resuming)."""
    folder = run_dir(checkpoint_dir, settings)
    resuming = tf.io.gfile.exists(posixpath.join(folder, SETTINGS_FILE))
    others = [] if resuming else other_runs(checkpoint_dir, settings.run_id())
    with write_dir(folder, role) as path, tf.io.gfile.GFile(posixpath.join(path, SETTINGS_FILE), "w") as f:
        f.write(json.dumps(settings.as_json(), indent=2, sort_keys=True) + "\n")
    return folder, describe_others(checkpoint_dir, settings, others) if others else None
