"""CLI: images (tfds, a folder of class sub-folders, or synthetic) -> sharded TFRecords + metadata.json."""

# This module imports no TensorFlow: the conversion's worker processes import the main module (multiprocessing
# re-imports `python -m` modules in its workers), and they only need PIL. run() loads the rest.

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

from trainer.errors import TrainerError

if TYPE_CHECKING:
    from trainer.metadata import Metadata

DEFAULT_TFDS_NAME = "cats_vs_dogs"
DEFAULT_PROGRESS_SECONDS = 30.0
# The chief's patience with the other replicas: they may start minutes after it (Vertex provisions each pool
# on its own) and list (or, for tfds, download and prepare) the source before their first shard.
DEFAULT_STALL_SECONDS = 3600.0

log = logging.getLogger("trainer.create_tfrecords")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from trainer.conversion import default_workers

    p = argparse.ArgumentParser(prog="python -m trainer.create_tfrecords", description=__doc__)
    p.add_argument("--source", choices=["tfds", "folder", "synthetic"], required=True)
    p.add_argument("--folder", help="with --source folder: one sub-folder of JPEG/PNG images per class")
    p.add_argument(
        "--tfds-name",
        default=DEFAULT_TFDS_NAME,
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
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="processes converting images (default: every core this process may use)",
    )
    p.add_argument(
        "--progress-seconds",
        type=float,
        default=DEFAULT_PROGRESS_SECONDS,
        help=f"seconds between progress lines (default {DEFAULT_PROGRESS_SECONDS:g})",
    )
    p.add_argument(
        "--stall-seconds",
        type=float,
        default=DEFAULT_STALL_SECONDS,
        help="with several replicas: the chief fails, naming the missing shards and their replicas, when no "
        f"shard is marked done for this long while it waits (default {DEFAULT_STALL_SECONDS:g})",
    )
    args = p.parse_args(argv)
    if args.source == "folder" and not args.folder:
        p.error("--source folder needs --folder DIR (one sub-folder of images per class)")
    if args.source == "folder" and inside(args.output, args.folder):
        from trainer.metadata import tfrecords_dir_for

        p.error(
            f"--output {args.output} is inside --folder {args.folder}: the next conversion would read it as "
            "a class folder. Write the TFRecords outside the image folder, e.g. --output "
            f"{tfrecords_dir_for(args.folder)}"
        )
    if args.image_size < 32:
        p.error(f"--image-size {args.image_size} is too small; the backbones need at least 32")
    if args.shard_size < 1:
        p.error("--shard-size must be at least 1")
    if not 0 < args.valid_fraction < 1:
        p.error(f"--valid-fraction {args.valid_fraction} must be between 0 and 1 (exclusive), e.g. 0.2")
    if args.count is not None and args.count < 1:
        p.error("--count must be positive")
    if args.workers < 1:
        p.error(f"--workers {args.workers} must be at least 1")
    if args.progress_seconds <= 0:
        p.error(f"--progress-seconds {args.progress_seconds:g} must be positive, e.g. 30")
    if args.stall_seconds <= 0:
        p.error(f"--stall-seconds {args.stall_seconds:g} must be positive, e.g. {DEFAULT_STALL_SECONDS:g}")
    return args


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or below it, through a visible entry (hidden ones are never classes)."""
    path, folder = (p if "://" in p else os.path.abspath(p) for p in (path, folder))
    path, folder = path.rstrip("/"), folder.rstrip("/")
    if path == folder:
        return True
    return path.startswith(folder + "/") and not path[len(folder) + 1 :].startswith(".")


def run(args: argparse.Namespace) -> Metadata | None:
    """This replica's part of the conversion; the chief (or only) replica returns the data set's metadata."""
    from trainer import data_prep

    return data_prep.run(args)


def main(argv: list[str] | None = None) -> None:
    from trainer import startup

    startup.quiet_start()  # before the conversion's worker processes start (they inherit stderr)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("trainer").setLevel(logging.INFO)
    args = parse_args(argv)
    try:
        run(args)  # it says once what it did: wrote the data set, or found it already there
    except TrainerError as exc:
        sys.exit(f"error: {exc}")
    except KeyboardInterrupt:
        sys.exit(
            f"interrupted: conversion stopped; kept the finished shards in {args.output} (the same command "
            "writes only the rest)"
        )


if __name__ == "__main__":
    main()
