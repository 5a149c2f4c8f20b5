"""A conversion's files in its output: the conversion file, the shards, and each shard's done marker.

A shard appears whole or not at all: it is written under a temporary name (which the readers' `*.tfrec`
patterns never match) and renamed once closed. Locally the rename is atomic; on gs:// TensorFlow renames by a
server-side copy (an object is visible only once complete) and then deletes the temporary object. Writing
straight to the final name would not do on gs://: TensorFlow's GCS writer uploads what it holds when it is
destroyed, so a failed run would leave a partial shard under a real name (tensorflow/tsl `gcs_file_system.cc`:
`~GcsWritableFile` calls `Close`, which syncs; `RenameObject` is `rewriteTo` then delete).
The done marker, written after the rename, holds the shard's counts: the chief builds metadata.json from the
markers, and a re-run (after a preemption) skips the shards that have one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import posixpath
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from trainer import metadata
from trainer.errors import TrainerError

CONVERSION_FILE = "_conversion.json"
DONE_DIR = "_done"
TMP_TAG = ".tmp-"
# The conversion file's fingerprint without the images' contents (settings, names and labels).
NAMES_KEY = "names_fingerprint"

log = logging.getLogger("trainer.create_tfrecords")


@dataclass(frozen=True)
class ShardCounts:
    counts: dict[str, int]  # records written per class name
    skipped: int  # unreadable images among the shard's items


def temporary(path: str) -> str:
    """A unique name beside `path` for writing it (never matched by `*.tfrec` or `*.json`)."""
    return f"{path}{TMP_TAG}{os.getpid()}-{secrets.token_hex(4)}"


def publish(tmp: str, path: str) -> None:
    tf.io.gfile.rename(tmp, path, overwrite=True)


def write_atomically(path: str, text: str) -> None:
    tmp = temporary(path)
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(text)
    publish(tmp, path)


def changed_settings(held: Mapping[str, Any], wanted: Mapping[str, Any]) -> str:
    """`: image_size 64 there, 32 now` for each setting of metadata.json that differs ("" when none does:
    then the images themselves differ)."""
    changed = [
        f"{key} {held[key]!r} there, {value!r} now"
        for key, value in wanted.items()
        if key in held and held[key] != value
    ]
    return f": {'; '.join(changed)}" if changed else ""


def start(
    output: str, fingerprint: str, names_fingerprint: str = "", wanted: Mapping[str, Any] | None = None
) -> dict | None:
    """Readies `output` for this conversion; returns metadata.json's content if it is already complete.

    `names_fingerprint` leaves the images' contents out: a data set with the same one holds the same images
    by name, some since changed, and is converted again in place (its stale shards are rewritten: their done
    markers carry the old fingerprint). Refuses a directory holding another data set or another conversion's
    shards: they would mix.
    """
    meta_path = posixpath.join(output, metadata.FILENAME)
    conversion_path = posixpath.join(output, CONVERSION_FILE)
    if tf.io.gfile.exists(meta_path):
        done = _read_json(meta_path)
        if done.get("fingerprint") == fingerprint:
            return done
        if not done and tf.io.gfile.exists(conversion_path):
            # An empty or cut metadata.json (written in place by an older version when killed): the
            # conversion is unfinished, and its chief writes the file again.
            _same_conversion(output, conversion_path, fingerprint, names_fingerprint)
            return None
        conversion = _read_json(conversion_path)
        # A version without content stamps wrote a names-only fingerprint into both files.
        recorded = conversion.get(NAMES_KEY) or done.get("fingerprint")
        if names_fingerprint and recorded == names_fingerprint:
            log.info(
                "%s holds this data set converted from earlier contents of the same images (an image changed "
                "since, or the data set predates content checks): converting it again",
                output,
            )
            _begin(output, conversion_path, fingerprint, names_fingerprint, conversion.get("created_output"))
            # Whole or not at all: without metadata.json the data set reads as unfinished until it is redone.
            with contextlib.suppress(tf.errors.NotFoundError):  # another replica may have removed it
                tf.io.gfile.remove(meta_path)
            return None
        raise TrainerError(
            f"--output {output} already holds TFRecords of other images or settings"
            f"{changed_settings(done, wanted or {})}; choose a new directory or delete it first"
        )
    if tf.io.gfile.exists(conversion_path):
        _same_conversion(output, conversion_path, fingerprint, names_fingerprint)
        return None
    if tf.io.gfile.exists(output) and tf.io.gfile.glob(posixpath.join(output, "*.tfrec")):
        if tf.io.gfile.exists(conversion_path):  # another replica started it since the check above
            _same_conversion(output, conversion_path, fingerprint, names_fingerprint)
            return None
        raise TrainerError(
            f"--output {output} already holds TFRecords; choose a new directory or delete it first"
        )
    created = not tf.io.gfile.exists(output)
    _begin(output, conversion_path, fingerprint, names_fingerprint, created)
    return None


def _begin(output: str, conversion_path: str, fingerprint: str, names: str, created: object) -> None:
    tf.io.gfile.makedirs(posixpath.join(output, DONE_DIR))
    record = {"fingerprint": fingerprint, NAMES_KEY: names, "created_output": bool(created)}
    write_atomically(conversion_path, json.dumps(record))


def _same_conversion(output: str, conversion_path: str, fingerprint: str, names: str = "") -> None:
    """None (carry on) if the unfinished conversion in `output` is this one, or the same images with some
    changed since it began; else a refusal."""
    conversion = _read_json(conversion_path)
    if conversion.get("fingerprint") == fingerprint:
        return
    if names and conversion.get(NAMES_KEY) == names:
        log.info("%s: an image changed since this conversion began: converting the changed data set", output)
        _begin(output, conversion_path, fingerprint, names, conversion.get("created_output"))
        return
    raise TrainerError(
        f"--output {output} holds an unfinished conversion of another source or with other settings; "
        "choose a new directory, delete it, or re-run that conversion's own command"
    )


def remove_leftovers(output: str, names: set[str]) -> None:
    """Deletes the temporary files an interrupted run left for these shards (and their done markers) or
    other files of `output` (no other replica writes them)."""
    for folder, suffix in ((output, ""), (posixpath.join(output, DONE_DIR), ".json")):
        own = {name + suffix for name in names}
        for path in tf.io.gfile.glob(posixpath.join(folder, f"*{TMP_TAG}*")):
            if posixpath.basename(path).split(TMP_TAG)[0] in own:
                tf.io.gfile.remove(path)


def mark_done(output: str, shard_name: str, fingerprint: str, counts: ShardCounts) -> None:
    marker = {"fingerprint": fingerprint, "counts": counts.counts, "skipped": counts.skipped}
    write_atomically(posixpath.join(output, DONE_DIR, f"{shard_name}.json"), json.dumps(marker))


def done_names(output: str) -> set[str]:
    """Shards that have a done marker (not yet checked against the conversion's fingerprint)."""
    done_dir = posixpath.join(output, DONE_DIR)
    if not tf.io.gfile.isdir(done_dir):
        return set()
    return {name.removesuffix(".json") for name in tf.io.gfile.listdir(done_dir) if name.endswith(".json")}


def read_done(output: str, shard_name: str, fingerprint: str) -> ShardCounts | None:
    """A shard's counts, if its marker belongs to this conversion."""
    marker = _read_json(posixpath.join(output, DONE_DIR, f"{shard_name}.json"))
    if marker.get("fingerprint") != fingerprint:
        return None
    return ShardCounts(counts=marker["counts"], skipped=marker["skipped"])


def remove_conversion(output: str, shard_names: list[str]) -> None:
    """Deletes everything the conversion wrote (after a data error that a re-run would meet again)."""
    created = _read_json(posixpath.join(output, CONVERSION_FILE)).get("created_output", False)
    remove_leftovers(output, set(shard_names))
    for name in shard_names:
        path = posixpath.join(output, name)
        if tf.io.gfile.exists(path):
            tf.io.gfile.remove(path)
    if tf.io.gfile.exists(posixpath.join(output, DONE_DIR)):
        tf.io.gfile.rmtree(posixpath.join(output, DONE_DIR))
    tf.io.gfile.remove(posixpath.join(output, CONVERSION_FILE))
    if created and not tf.io.gfile.listdir(output):
        tf.io.gfile.rmtree(output)


def _read_json(path: str) -> dict:
    try:
        with tf.io.gfile.GFile(path) as f:
            value = json.load(f)
    except (tf.errors.NotFoundError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}
