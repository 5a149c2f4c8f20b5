"""CLI: images (tfds, a folder of class sub-folders, or synthetic) -> sharded TFRecords + metadata.json."""

from __future__ import annotations

import argparse
import logging
import posixpath
import sys
from collections import Counter

import tensorflow as tf

from trainer import metadata, records, sources
from trainer.errors import TrainerError
from trainer.images import UnreadableImage, to_stored_jpeg
from trainer.split import given_split, split_items

log = logging.getLogger("trainer.create_tfrecords")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m trainer.create_tfrecords", description=__doc__)
    p.add_argument("--source", choices=["tfds", "folder", "synthetic"], required=True)
    p.add_argument("--folder", help="with --source folder: one sub-folder of JPEG/PNG images per class")
    p.add_argument(
        "--tfds-name",
        default=sources.DEFAULT_TFDS_NAME,
        help="with --source tfds: the dataset, e.g. cats_vs_dogs, cassava, tf_flowers",
    )
    p.add_argument(
        "--count", type=int, help="synthetic: images to make (default 400); folder, tfds: at most this many"
    )
    p.add_argument("--output", required=True, help="local directory or gs:// URI for the TFRecords")
    p.add_argument(
        "--image-size", type=int, required=True, help="stored shorter side in pixels = training size"
    )
    p.add_argument("--shard-size", type=int, default=1024, help="images per .tfrec file")
    p.add_argument("--valid-fraction", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    if args.source == "folder" and not args.folder:
        p.error("--source folder needs --folder DIR (one sub-folder of images per class)")
    if args.image_size < 32:
        p.error(f"--image-size {args.image_size} is too small; the backbones need at least 32")
    if args.shard_size < 1:
        p.error("--shard-size must be at least 1")
    if not 0 < args.valid_fraction < 1:
        p.error(f"--valid-fraction {args.valid_fraction} must be between 0 and 1 (exclusive), e.g. 0.2")
    if args.count is not None and args.count < 1:
        p.error("--count must be positive")
    return args


def load_source(args: argparse.Namespace) -> sources.Source:
    if args.source == "folder":
        return sources.from_folder(args.folder, args.count)
    if args.source == "tfds":
        return sources.from_tfds(args.tfds_name, args.count, args.valid_fraction)
    return sources.synthetic(args.count or 400, args.image_size, args.seed)


def check_output(output: str) -> None:
    """Refuses a directory that already holds a data set: stale shards would silently join the new one."""
    if tf.io.gfile.exists(output) and (
        tf.io.gfile.exists(posixpath.join(output, metadata.FILENAME))
        or tf.io.gfile.glob(posixpath.join(output, "*.tfrec"))
    ):
        raise TrainerError(
            f"--output {output} already holds TFRecords; choose a new directory or delete it first"
        )


def write_split(
    items: list[sources.Item],
    split: str,
    output: str,
    image_size: int,
    shard_size: int,
    class_names: list[str],
) -> tuple[Counter, int, int]:
    """Writes `split-NNNNN.tfrec` shards; returns (counts per class name, skipped, shards)."""
    counts: Counter = Counter()
    skipped = shard = in_shard = 0
    writer = None
    for item in items:
        try:
            jpeg, height, width = to_stored_jpeg(item.load(), image_size)
        except (UnreadableImage, tf.errors.OpError) as exc:
            log.warning("skipping unreadable image %s: %s", item.key, exc)
            skipped += 1
            continue
        if writer is None or in_shard == shard_size:
            if writer is not None:
                writer.close()
                shard += 1
            writer = tf.io.TFRecordWriter(posixpath.join(output, f"{split}-{shard:05d}.tfrec"))
            in_shard = 0
        writer.write(records.serialize(jpeg, item.label, height, width))
        in_shard += 1
        counts[class_names[item.label]] += 1
    if writer is not None:
        writer.close()
        shard += 1
    return counts, skipped, shard


def run(args: argparse.Namespace) -> metadata.Metadata:
    check_output(args.output)
    source = load_source(args)
    if not source.items:
        raise TrainerError("the source has no images; check --folder / --count")
    if source.valid_items is None:
        splits = split_items(source.items, args.valid_fraction, args.seed)
    else:
        splits = given_split(source.items, source.valid_items, args.seed)
    created = not tf.io.gfile.exists(args.output)
    tf.io.gfile.makedirs(args.output)
    try:
        meta = write_splits(args, source, splits)
    except BaseException:
        remove_partial(args.output, created)  # nothing half-created: no shards without a metadata.json
        raise
    metadata.write(args.output, meta)  # last: a data dir without metadata.json is visibly incomplete
    return meta


def write_splits(
    args: argparse.Namespace, source: sources.Source, splits: dict[str, list[sources.Item]]
) -> metadata.Metadata:
    meta = metadata.Metadata(
        image_size=args.image_size,
        class_names=source.class_names,
        counts={},
        source=args.source if args.source != "tfds" else f"tfds:{args.tfds_name}",
        seed=args.seed,
        valid_fraction=args.valid_fraction if source.valid_items is None else 0.0,
        valid_split="" if source.valid_items is None else sources.TFDS_VALID_SPLIT,
    )
    for split in metadata.SPLITS:
        counts, skipped, shards = write_split(
            splits[split], split, args.output, args.image_size, args.shard_size, source.class_names
        )
        meta.counts[split] = {name: counts.get(name, 0) for name in source.class_names}
        meta.skipped += skipped
        meta.shards[split] = shards
        log.info("%s: %d images in %d shard(s), %d skipped", split, sum(counts.values()), shards, skipped)
    empty = [name for name in source.class_names if not any(meta.counts[s][name] for s in metadata.SPLITS)]
    if empty:
        raise TrainerError(
            f"class(es) {empty} have no readable images ({meta.skipped} unreadable file(s) skipped, see the "
            "warnings above); replace those files with JPEG/PNG images, or remove the class"
        )
    if meta.total("train") == 0 or meta.total("valid") == 0:
        raise TrainerError("no readable images left for both splits; check the source images")
    return meta


def remove_partial(output: str, created: bool) -> None:
    """Deletes the shards a failed run wrote (check_output made sure no earlier ones were there)."""
    for path in tf.io.gfile.glob(posixpath.join(output, "*.tfrec")):
        tf.io.gfile.remove(path)
    if created and not tf.io.gfile.listdir(output):
        tf.io.gfile.rmtree(output)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("trainer").setLevel(logging.INFO)
    args = parse_args(argv)
    try:
        meta = run(args)
    except TrainerError as exc:
        sys.exit(f"error: {exc}")
    log.info(
        "wrote %s: train %s, valid %s, skipped %d",
        args.output,
        meta.counts["train"],
        meta.counts["valid"],
        meta.skipped,
    )


if __name__ == "__main__":
    main()
