"""One replica's part of a conversion (its shards, on every core), then the chief's metadata.json.

Every replica lists the source and splits it the same way (seeded, by key), cuts the same shards and writes
every replica-count-th one; the chief then waits for every shard's done marker and sums their counts.
"""

from __future__ import annotations

import argparse
import logging
import os
import posixpath
import time
from dataclasses import asdict

from trainer import (
    conversion,
    data_replicas,
    image_stamps,
    images,
    metadata,
    shard_files,
    shard_plan,
    sources,
)
from trainer.errors import TrainerError
from trainer.progress import Progress, duration
from trainer.shard_writer import write_shards
from trainer.split import given_split, split_items

log = logging.getLogger("trainer.create_tfrecords")

# How often the chief looks for the other replicas' done markers.
POLL_SECONDS = 2.0
# Missing shards the chief's error names one by one (the rest as a count).
SHOWN_MISSING = 10


def load_source(args: argparse.Namespace) -> sources.Source:
    if args.source == "folder":
        return sources.from_folder(args.folder, args.count)
    if args.source == "tfds":
        return sources.from_tfds(args.tfds_name, args.count, args.valid_fraction)
    return sources.synthetic(args.count or 400, args.image_size, args.seed)


# Settings an error names when --output holds another data set (metadata.json keys).
SETTINGS_NAMED = ("image_size", "class_names", "source", "seed", "valid_fraction", "valid_split")


def run(args: argparse.Namespace) -> metadata.Metadata | None:
    """Writes this replica's shards; the chief returns the data set's metadata, other replicas None."""
    replica = data_replicas.from_env(os.environ)
    source = load_source(args)
    if not source.items:
        raise TrainerError("the source has no images; check --folder / --count")
    if source.valid_items is None:
        splits = split_items(source.items, args.valid_fraction, args.seed)
    else:
        splits = given_split(source.items, source.valid_items, args.seed)
    shards = shard_plan.plan(splits, args.shard_size)
    meta = empty_metadata(args, source)
    settings = {**asdict(meta), "jpeg_quality": images.JPEG_QUALITY}
    names = shard_plan.fingerprint(shards, settings)
    # Only files can change under the same name (tfds data sets are versioned; synthetic ones are seeded).
    keys = [item.key for shard in shards for item in shard.items]
    stamps = image_stamps.stamps(keys) if args.source == "folder" else None
    if stamps is None:
        meta.fingerprint, names = names, ""  # nothing can change under a name: no content check
    else:
        meta.fingerprint = shard_plan.fingerprint(shards, settings, stamps)
    # The settings a different data set in --output is told apart by (its metadata.json's own keys).
    wanted = {k: v for k, v in asdict(meta).items() if k in SETTINGS_NAMED}
    complete = shard_files.start(args.output, meta.fingerprint, names, wanted)
    if complete is not None:
        done = metadata.Metadata(**complete)
        if replica.is_chief:
            log.info(
                "%s already holds this data set (same images and settings): nothing written; "
                "train %s, valid %s",
                args.output,
                done.counts.get("train"),
                done.counts.get("valid"),
            )
        return done if replica.is_chief else None
    write_own_shards(args, shards, replica, source.class_names, meta.fingerprint)
    if not replica.is_chief:
        return None
    counts = wait_for_shards(
        args.output, shards, meta.fingerprint, replica, args.progress_seconds, args.stall_seconds
    )
    try:
        check_counts(fill_counts(meta, shards, counts))
    except TrainerError:
        shard_files.remove_conversion(args.output, [shard.name for shard in shards])
        raise
    # Last, and whole or not at all: a data dir without metadata.json is visibly incomplete and resumes.
    shard_files.write_atomically(posixpath.join(args.output, metadata.FILENAME), metadata.dumps(meta))
    log.info(
        "wrote %s: train %s, valid %s, skipped %d",
        args.output,
        meta.counts["train"],
        meta.counts["valid"],
        meta.skipped,
    )
    return meta


def empty_metadata(args: argparse.Namespace, source: sources.Source) -> metadata.Metadata:
    return metadata.Metadata(
        image_size=args.image_size,
        class_names=source.class_names,
        counts={},
        source=args.source if args.source != "tfds" else f"tfds:{args.tfds_name}",
        seed=args.seed,
        valid_fraction=args.valid_fraction if source.valid_items is None else 0.0,
        valid_split="" if source.valid_items is None else sources.TFDS_VALID_SPLIT,
    )


def write_own_shards(
    args: argparse.Namespace,
    shards: list[shard_plan.Shard],
    replica: data_replicas.Replica,
    class_names: list[str],
    fingerprint: str,
) -> None:
    mine = shard_plan.for_replica(shards, replica)
    finished = shard_files.done_names(args.output)
    todo = [
        shard
        for shard in mine
        if shard.name not in finished or shard_files.read_done(args.output, shard.name, fingerprint) is None
    ]
    images_todo = sum(len(shard.items) for shard in todo)
    log.info(
        "%s: %d of %d shard(s) to write (%d images) on %d worker(s); %d already complete",
        replica,
        len(todo),
        len(shards),
        images_todo,
        args.workers,
        len(mine) - len(todo),
    )
    # The chief alone writes metadata.json: its temporary file from a killed run is its leftover too.
    own_files = {shard.name for shard in todo} | ({metadata.FILENAME} if replica.is_chief else set())
    shard_files.remove_leftovers(args.output, own_files)
    with (
        conversion.converter(args.workers, args.image_size) as convert,
        Progress(str(replica), images_todo, args.progress_seconds, log.info) as progress,
    ):
        write_shards(todo, args.output, fingerprint, class_names, convert, progress)


def wait_for_shards(
    output: str,
    shards: list[shard_plan.Shard],
    fingerprint: str,
    replica: data_replicas.Replica,
    interval: float,
    stall_seconds: float,
) -> dict[str, shard_files.ShardCounts]:
    """Every shard's counts, once every replica has marked its shards done; an error naming the missing
    shards and their replicas when no shard is marked done for `stall_seconds`."""
    counts: dict[str, shard_files.ShardCounts] = {}
    start = last_new = last_line = time.monotonic()
    while True:
        for name in shard_files.done_names(output) - counts.keys():
            found = shard_files.read_done(output, name, fingerprint)
            if found is not None:
                counts[name] = found
                last_new = time.monotonic()
        if len(counts) == len(shards):
            return counts
        now = time.monotonic()
        if now - last_new >= stall_seconds:
            raise TrainerError(stalled(shards, set(counts), replica, stall_seconds))
        if now - last_line >= interval:
            log.info(
                "%s: waiting for the other replicas: %d/%d shards complete, elapsed %s",
                replica,
                len(counts),
                len(shards),
                duration(now - start),
            )
            last_line = now
        time.sleep(min(POLL_SECONDS, interval, stall_seconds))


def stalled(
    shards: list[shard_plan.Shard], done: set[str], chief: data_replicas.Replica, stall_seconds: float
) -> str:
    """The chief's error when the others stopped marking shards done: which shards, which replicas."""
    missing = [shard.name for shard in shards if shard.name not in done]
    replicas = [data_replicas.Replica(i, chief.count) for i in range(chief.count)]
    owners = [r for r in replicas if any(s.name not in done for s in shard_plan.for_replica(shards, r))]
    names = ", ".join(missing[:SHOWN_MISSING])
    more = f" and {len(missing) - SHOWN_MISSING} more" if len(missing) > SHOWN_MISSING else ""
    writers = ", ".join(map(str, owners))
    return (
        f"{chief}: no shard was marked done for {duration(stall_seconds)} "
        f"(--stall-seconds {stall_seconds:g}); {len(missing)} of {len(shards)} shard(s) missing: "
        f"{names}{more}, written by {writers}. Check those replicas' logs "
        "(stopped, stuck or never started); the same command resumes and keeps every finished shard, and a "
        "larger --stall-seconds gives slow replicas more time"
    )


def fill_counts(
    meta: metadata.Metadata, shards: list[shard_plan.Shard], counts: dict[str, shard_files.ShardCounts]
) -> metadata.Metadata:
    """Counts per split and class, shards with records, and unreadable images: each shard counted once."""
    for split in metadata.SPLITS:
        mine = [counts[shard.name] for shard in shards if shard.split == split]
        meta.counts[split] = {
            name: sum(shard.counts.get(name, 0) for shard in mine) for name in meta.class_names
        }
        meta.shards[split] = sum(1 for shard in mine if shard.counts)
        skipped = sum(shard.skipped for shard in mine)
        meta.skipped += skipped
        log.info(
            "%s: %d images in %d shard(s), %d skipped", split, meta.total(split), meta.shards[split], skipped
        )
    return meta


def check_counts(meta: metadata.Metadata) -> None:
    """Errors for a class without readable images or an empty split; a warning for a class missing a split."""
    splits = metadata.SPLITS
    empty = [name for name in meta.class_names if not any(meta.counts[s][name] for s in splits)]
    if empty:
        raise TrainerError(
            f"class(es) {empty} have no readable images ({meta.skipped} unreadable file(s) skipped, see the "
            "warnings above); replace those files with JPEG/PNG images, or remove the class"
        )
    if meta.total("train") == 0 or meta.total("valid") == 0:
        raise TrainerError("no readable images left for both splits; check the source images")
    for split in splits:
        missing = [name for name in meta.class_names if not meta.counts[split][name]]
        if missing:
            log.warning(
                "class(es) %s have no %s image (theirs were unreadable or too few): %s figures will not "
                "cover them; add readable images to those classes",
                missing,
                split,
                "validation" if split == "valid" else "training",
            )
