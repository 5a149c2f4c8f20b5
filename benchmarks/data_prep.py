"""Data preparation rate against the same-work floor, images/second, in one run.

conversion: `create_tfrecords --source folder` as the data job runs it (--workers = every core): list, split,
            decode, EXIF transpose, RGB, bicubic resize of the shorter side to 224, JPEG q95, TFRecord writes,
            shards renamed and marked done, metadata.json
floor:      the same per-image work (read the file, convert) on a process pool of every core, nothing written
one process: the conversion with --workers 1, for comparison

The images are 500x375 JPEG views (Cats vs Dogs size) of the colour photographs scikit-image ships. Rounds
alternate (in turn reversed), and the best of each is kept, so load from other processes hits all alike; the
load average is printed with the figures.

    .venv/bin/python benchmarks/data_prep.py [--images 1024] [--rounds 5] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
from photos import photo_views, sample_photos

SIZE = 224
TARGET = 0.9


def write_photos(folder: Path, count: int) -> list[str]:
    """`count` JPEG files, alternately in class folders a/ and b/ (q90, as photos from cameras come)."""
    from PIL import Image

    paths = []
    for i, view in enumerate(photo_views(np.random.default_rng(0), sample_photos(), count)):
        path = folder / "ab"[i % 2] / f"{i:05d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(view).save(path, format="JPEG", quality=90)
        paths.append(str(path))
    return paths


def floor_seconds(paths: list[str], workers: int) -> float:
    from trainer import conversion, loaders

    start = time.perf_counter()
    with conversion.converter(workers, SIZE) as convert:
        for _ in convert(partial(loaders.read_file, path) for path in paths):
            pass
    return time.perf_counter() - start


def conversion_seconds(folder: Path, output: Path, workers: int) -> float:
    from trainer import create_tfrecords

    args = ["--source", "folder", "--folder", str(folder), "--output", str(output), "--image-size", str(SIZE)]
    parsed = create_tfrecords.parse_args([*args, "--workers", str(workers)])
    start = time.perf_counter()
    create_tfrecords.run(parsed)
    return time.perf_counter() - start


def main() -> None:
    from trainer.conversion import default_workers

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=5, help="alternating measurements; the best of each is kept")
    p.add_argument("--workers", type=int, default=default_workers())
    args = p.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "photos"
        paths = write_photos(folder, args.images)
        best = {"floor": 0.0, "conversion": 0.0, "one process": 0.0}
        for round_ in range(args.rounds):
            output = Path(tmp) / f"round-{round_}"
            measures = [
                ("floor", partial(floor_seconds, paths, args.workers)),
                ("conversion", partial(conversion_seconds, folder, output / "conversion", args.workers)),
                ("one process", partial(conversion_seconds, folder, output / "one-process", 1)),
            ]
            for name, measure in measures if round_ % 2 == 0 else reversed(measures):
                best[name] = max(best[name], args.images / measure())
    print(
        f"{args.images} images 500x375 -> shorter side {SIZE}, {args.workers} workers, best of {args.rounds}"
    )
    print(f"1-minute load average (all processes): {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    for name, rate in best.items():
        print(f"{name:12}: {rate:8.1f} img/s")
    ratio = best["conversion"] / best["floor"]
    verdict = "met" if ratio >= TARGET else "NOT met"
    print(f"conversion / floor: {ratio:.2f}x   target: >= {TARGET}x -> {verdict}")
    print(f"conversion / one process: {best['conversion'] / best['one process']:.2f}x")


if __name__ == "__main__":
    main()
