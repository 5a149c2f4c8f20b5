"""Data preparation rate against the same-work floor, images/second, in one run.

conversion: `create_tfrecords --source folder` as the data job runs it (--workers = every core): list, split,
            decode, EXIF transpose, RGB, bicubic resize of the shorter side to 224, JPEG q95, TFRecord writes,
            shards renamed and marked done, metadata.json
floor:      the same per-image work (read the file, decode, EXIF transpose, RGB, resize, encode) on a started
            process pool of every core, each worker a contiguous share of the files, nothing written and
            only a length sent back: the machine's speed at this work
one process: the conversion with --workers 1, for comparison
workers read: with --read-latency-ms, the floor's pool with each worker waiting for its own reads (the
            conversion's design before it read ahead on threads)

--camera instead converts camera photos: 12 MP (4032x3024) and 2 MP (1600x1200) q90 JPEGs of the same
photographs, upscaled. Per size, in one run: the conversion (as above), the floor (every core doing only the
per-image work: read, decode with DCT scaling, EXIF transpose, RGB, resize, encode) and the full-decode floor
(the same with every pixel decoded: the conversion's per-image work before it decoded at the kept size).

--quality prints how far the scaled decode's stored pixels are from a full decode's (mean and largest
difference, grey levels of 255) per decode margin (trainer/images.py DECODE_MARGIN), stored size and camera
size, on the upscaled photographs and on mosaics of their crops at their own resolution (full detail).

--executors instead compares ways to spread the same conversion over the cores (why trainer/conversion.py
uses processes): a process pool, a thread pool, and a tf.data parallel map over the same PIL code in
tf.py_function; plus how much of one conversion holds the GIL (a spinning Python thread's speed beside a
converting one, against its speed alone).

The images are 500x375 JPEG views (Cats vs Dogs size) of the colour photographs scikit-image ships. Rounds
alternate (in turn reversed), and the best of each is kept, so load from other processes hits all alike; the
load average is printed with the figures.

    .venv/bin/python benchmarks/data_prep.py [--images 1024] [--rounds 5] [--workers N] [--executors]
        [--read-latency-ms 50] [--camera] [--quality]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
from photos import mosaic, photo_views, sample_photos

SIZE = 224
TARGET = 0.9
# Camera sizes: a 12 MP phone or camera photo, and a mid size.
CAMERA_SIZES = ((4032, 3024), (1600, 1200))
# The target: the conversion of 12 MP photos at least this many times its rate with full decodes.
CAMERA_SPEEDUP = 3.0
# The full-decode floor's share of the camera photos: at a fifth of the rate, all of them would take long.
FULL_DECODE_IMAGES = 32
MARGINS = (1.0, 1.5, 2.0, 3.0)
STORED_SIZES = (224, 299, 512)


def write_photos(folder: Path, count: int, size: tuple[int, int] = (500, 375)) -> list[str]:
    """`count` JPEG files of `size`, alternately in class folders a/ and b/ (q90, as cameras save them)."""
    from PIL import Image

    paths = []
    for i, view in enumerate(photo_views(np.random.default_rng(0), sample_photos(), count, size)):
        path = folder / "ab"[i % 2] / f"{i:05d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(view).save(path, format="JPEG", quality=90)
        paths.append(str(path))
    return paths


def convert_file(path: str, latency: float = 0.0) -> int:
    """The floor's per-image work: read, decode, EXIF transpose, RGB, resize, JPEG encode; nothing kept.
    `latency`: the read first waits that long (a worker reading its own gs:// file)."""
    from trainer.images import to_stored_jpeg

    time.sleep(latency)
    with open(path, "rb") as f:
        return len(to_stored_jpeg(f.read(), SIZE)[0])


def full_decode_file(path: str) -> int:
    """The full-decode floor's per-image work: as convert_file, but every pixel of a JPEG decoded."""
    from trainer import images

    with open(path, "rb") as f:
        return len(images.encoded(images.resized(images.decode(f.read()), SIZE)))


def floor_seconds(
    paths: list[str],
    pool: Executor,
    workers: int,
    latency: float = 0.0,
    work: Callable[..., int] = convert_file,
) -> float:
    """The same per-image work on a started process pool of every core, each worker a contiguous share of
    the files, nothing written and nothing but a length sent back: the machine's speed at this work."""
    start = time.perf_counter()
    work = partial(work, latency=latency) if latency else work
    for _ in pool.map(work, paths, chunksize=max(1, len(paths) // (workers * 4))):
        pass
    return time.perf_counter() - start


def floor_pool(workers: int) -> ProcessPoolExecutor:
    """Started and warm (every worker has imported PIL and converted an image) before any timing."""
    context = multiprocessing.get_context("forkserver")
    # What the conversion's workers preload too (one fork server serves both pools of this process).
    context.set_forkserver_preload(["trainer.conversion"])
    return ProcessPoolExecutor(workers, mp_context=context)


def _process_cpu(pid: int, reaped_children: bool = False) -> float:
    """CPU seconds of one process from /proc (with its waited-for children's, if asked)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of proc(5))
    if reaped_children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pool: ProcessPoolExecutor) -> float:
    """CPU seconds used so far by this process (its threads too), the floor's live workers, and the fork
    server with the conversion workers it has reaped: what a measurement cost, whatever else runs."""
    from multiprocessing import forkserver

    total = time.process_time() + sum(_process_cpu(pid) for pid in pool._processes)
    server = forkserver._forkserver._forkserver_pid
    return total + (_process_cpu(server, reaped_children=True) if server else 0.0)


def slow_reads(latency: float) -> None:
    """Every URI read of the conversion first waits `latency` seconds, as a gs:// read waits for its first
    byte; the conversion then reads its folder as a file:// URI, read ahead on threads as gs:// is (the floor
    keeps reading local files: it is the machine's speed at the work, not the storage's)."""
    from trainer import loaders

    read = loaders.read_file

    def read_after_latency(path: str) -> bytes:
        time.sleep(latency)
        return read(path)

    loaders.read_file = read_after_latency


def conversion_seconds(folder: Path | str, output: Path, workers: int) -> float:
    from trainer import create_tfrecords

    args = ["--source", "folder", "--folder", str(folder), "--output", str(output), "--image-size", str(SIZE)]
    parsed = create_tfrecords.parse_args([*args, "--workers", str(workers)])
    start = time.perf_counter()
    create_tfrecords.run(parsed)
    return time.perf_counter() - start


def convert_bytes(data: bytes) -> int:
    from trainer.images import to_stored_jpeg

    return len(to_stored_jpeg(data, SIZE)[0])


def executor_rates(paths: list[str], workers: int, rounds: int) -> dict[str, float]:
    """Images/s of the same conversion of in-memory files: one process, processes, threads, tf.data."""

    from concurrent.futures import ThreadPoolExecutor

    import tensorflow as tf

    data = [Path(path).read_bytes() for path in paths]
    context = multiprocessing.get_context("forkserver")
    with (
        ProcessPoolExecutor(workers, mp_context=context) as processes,
        ThreadPoolExecutor(workers) as threads,
    ):
        list(processes.map(convert_bytes, data[:workers]))  # started and warm
        mapped = tf.data.Dataset.from_tensor_slices(data).map(
            lambda x: tf.py_function(lambda b: convert_bytes(b.numpy()), [x], tf.int64),
            num_parallel_calls=workers,
        )
        runs = {
            "one process": lambda: [convert_bytes(d) for d in data],
            "process pool": lambda: list(processes.map(convert_bytes, data, chunksize=8)),
            "thread pool": lambda: list(threads.map(convert_bytes, data)),
            "tf.data map (py_function)": lambda: [None for _ in mapped],
        }
        best = dict.fromkeys(runs, 0.0)
        for _ in range(rounds):
            for name, run in runs.items():
                start = time.perf_counter()
                run()
                best[name] = max(best[name], len(data) / (time.perf_counter() - start))
    return best


def gil_free_fraction(paths: list[str]) -> float:
    """A spinning thread's speed while this thread converts, over its speed alone: 1.0 = no GIL held."""
    import threading

    data = [Path(path).read_bytes() for path in paths[:128]]

    def spin_rate(work: object) -> float:
        stop, count = threading.Event(), [0]

        def spin() -> None:
            while not stop.is_set():
                count[0] += 1

        thread = threading.Thread(target=spin)
        start = time.perf_counter()
        thread.start()
        work()
        stop.set()
        thread.join()
        return count[0] / (time.perf_counter() - start)

    alone = spin_rate(lambda: time.sleep(2.0))
    return spin_rate(lambda: [convert_bytes(d) for d in data]) / alone


def camera(args: argparse.Namespace) -> None:
    """Per camera size: the conversion, the floor (decode with scaling) and the full-decode floor, one run."""
    load_before = os.getloadavg()[0]
    print(
        f"camera photos (q90) -> shorter side {SIZE}, {args.workers} workers, {args.images} images per size "
        f"(full decode: the first {FULL_DECODE_IMAGES}), best of {args.rounds}"
    )
    pool = floor_pool(args.workers)
    with tempfile.TemporaryDirectory() as tmp:
        for width, height in CAMERA_SIZES:
            folder = Path(tmp) / f"photos-{width}"
            paths = write_photos(folder, args.images, (width, height))
            megabytes = sum(Path(path).stat().st_size for path in paths) / len(paths) / 1e6
            few = paths[:FULL_DECODE_IMAGES]
            list(pool.map(convert_file, paths[: args.workers * 2]))  # warm
            best = {"conversion": 0.0, "floor": 0.0, "full decode": 0.0}
            cpu = dict.fromkeys(best, float("inf"))
            for round_ in range(args.rounds):
                output = Path(tmp) / f"round-{width}-{round_}"
                measures = [
                    ("conversion", partial(conversion_seconds, folder, output, args.workers)),
                    ("floor", partial(floor_seconds, paths, pool, args.workers)),
                    ("full decode", partial(floor_seconds, few, pool, args.workers, work=full_decode_file)),
                ]
                for name, measure in measures if round_ % 2 == 0 else reversed(measures):
                    used, count = cpu_seconds(pool), len(few) if name == "full decode" else args.images
                    best[name] = max(best[name], count / measure())
                    time.sleep(0.5)  # the fork server reaps the conversion's workers
                    cpu[name] = min(cpu[name], (cpu_seconds(pool) - used) * 1000 / count)
            print(f"{width}x{height} ({megabytes:.2f} MB per JPEG):")
            for name, rate in best.items():
                print(f"  {name:12}: {rate:8.1f} img/s   {cpu[name]:7.1f} CPU ms/image")
            ratio = best["conversion"] / best["floor"]
            print(f"  conversion / floor: {ratio:.2f}x   target: >= {TARGET}x -> {_verdict(ratio >= TARGET)}")
            speedup = best["conversion"] / best["full decode"]
            target = f"   target: >= {CAMERA_SPEEDUP:g}x -> {_verdict(speedup >= CAMERA_SPEEDUP)}"
            print(f"  conversion / full-decode floor: {speedup:.2f}x{target if width == 4032 else ''}")
            print(f"  floor / conversion CPU per image: {cpu['floor'] / cpu['conversion']:.2f}x")
    pool.shutdown()
    print(f"1-minute load average (all processes): {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def _difference(got: list[np.ndarray], expected: list[np.ndarray]) -> str:
    diffs = [np.abs(a - b) for a, b in zip(got, expected, strict=True)]
    return f"{np.mean([d.mean() for d in diffs]):5.2f} / {max(int(d.max()) for d in diffs):3d}"


def quality() -> None:
    """The scaled decode's stored pixels against a full decode's, per margin, stored size and camera size."""
    import io

    from PIL import Image

    from trainer import images

    def jpeg(pixels: np.ndarray) -> bytes:
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, format="JPEG", quality=90)
        return out.getvalue()

    rng = np.random.default_rng(0)
    photos = sample_photos()
    print("stored pixels, scaled decode vs full decode: mean / largest difference (grey levels of 255);")
    print("last column: what the stored JPEG's encode (q95) itself changes in the full decode's pixels")
    header = "  ".join(f"margin {m:<3g} (decoded) " for m in MARGINS)
    print(f"{'camera JPEG':22} {'stored':>6}  {header}  q95 encode")
    for size in CAMERA_SIZES:
        contents = {
            "upscaled": [jpeg(view) for view in photo_views(rng, photos, 9, size)],
            "mosaic": [jpeg(mosaic(rng, photos, size)) for _ in range(4)],
        }
        for kind, datas in contents.items():
            for stored in STORED_SIZES:
                full_images = [images.resized(images.decode(d), stored) for d in datas]
                full = [np.asarray(p, dtype=int) for p in full_images]
                cells = []
                for margin in MARGINS:
                    decoded = [images.decode(d, stored, margin) for d in datas]
                    scaled = [np.asarray(images.resized(p, stored), dtype=int) for p in decoded]
                    cells.append(_difference(scaled, full) + f" ({decoded[0].width}x{decoded[0].height})")
                stored_jpegs = [io.BytesIO(images.encoded(p)) for p in full_images]
                reencoded = [np.asarray(Image.open(f), dtype=int) for f in stored_jpegs]
                cells = [cell.ljust(24) for cell in cells] + [_difference(reencoded, full)]
                label = f"{size[0]}x{size[1]} {kind}"
                print(f"{label:22} {stored:6}  " + "  ".join(cells))


def main() -> None:
    from trainer.conversion import default_workers

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, help="photos to convert (default 1024; --camera 128)")
    p.add_argument(
        "--rounds", type=int, help="alternating measurements, the best of each kept (default 5; --camera 3)"
    )
    p.add_argument("--workers", type=int, default=default_workers())
    p.add_argument("--executors", action="store_true", help="compare processes, threads and tf.data instead")
    p.add_argument("--camera", action="store_true", help="12 MP and 2 MP photos (default --images 128)")
    p.add_argument("--quality", action="store_true", help="scaled vs full decode pixels, per margin")
    p.add_argument(
        "--read-latency-ms",
        type=float,
        default=0.0,
        help="the conversion's every file read first waits this long, as a gs:// read on a Vertex replica",
    )
    args = p.parse_args()
    if args.quality:
        quality()
        return
    if args.camera:
        args.images, args.rounds = args.images or 128, args.rounds or 3
        camera(args)
        return
    args.images, args.rounds = args.images or 1024, args.rounds or 5
    if args.read_latency_ms:
        slow_reads(args.read_latency_ms / 1000)
    if args.executors:
        with tempfile.TemporaryDirectory() as tmp:
            paths = write_photos(Path(tmp), args.images)
            rates = executor_rates(paths, args.workers, args.rounds)
            free = gil_free_fraction(paths)
        print(
            f"{args.images} in-memory JPEGs 500x375 -> {SIZE}, {args.workers} workers, best of {args.rounds}"
        )
        for name, rate in rates.items():
            print(f"{name:26}: {rate:8.1f} img/s")
        held = max(1.0 - free, 0.01)
        print(
            f"GIL released during a conversion: {free:.0%} of its time; threads cap at ~{1 / held:.1f} cores"
        )
        print(f"1-minute load average (all processes): {os.getloadavg()[0]:.1f}")
        return
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "photos"
        paths = write_photos(folder, args.images)
        source = f"file://{folder}" if args.read_latency_ms else folder
        best = {"floor": 0.0, "conversion": 0.0, "one process": 0.0}
        if args.read_latency_ms:
            best["workers read"] = 0.0
        cpu = dict.fromkeys(best, float("inf"))  # CPU ms per image, the least of the rounds
        pool = floor_pool(args.workers)
        list(pool.map(convert_file, paths[: args.workers * 2]))
        for round_ in range(args.rounds):
            output = Path(tmp) / f"round-{round_}"
            measures = [
                ("floor", partial(floor_seconds, paths, pool, args.workers)),
                ("conversion", partial(conversion_seconds, source, output / "conversion", args.workers)),
                ("one process", partial(conversion_seconds, source, output / "one-process", 1)),
            ]
            if args.read_latency_ms:  # the design before read-ahead: each worker waits for its own reads
                wait = partial(floor_seconds, paths, pool, args.workers, args.read_latency_ms / 1000)
                measures.append(("workers read", wait))
            for name, measure in measures if round_ % 2 == 0 else reversed(measures):
                used = cpu_seconds(pool)
                best[name] = max(best[name], args.images / measure())
                time.sleep(0.5)  # the fork server reaps the conversion's workers
                cpu[name] = min(cpu[name], (cpu_seconds(pool) - used) * 1000 / args.images)
        pool.shutdown()
    latency = f", conversion reads wait {args.read_latency_ms:g} ms each" if args.read_latency_ms else ""
    print(
        f"{args.images} images 500x375 -> shorter side {SIZE}, {args.workers} workers, best of {args.rounds}"
        f"{latency}"
    )
    print(f"1-minute load average (all processes): {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    for name, rate in best.items():
        print(f"{name:12}: {rate:8.1f} img/s   {cpu[name]:6.2f} CPU ms/image")
    ratio = best["conversion"] / best["floor"]
    verdict = "met" if ratio >= TARGET else "NOT met"
    print(f"conversion / floor: {ratio:.2f}x   target: >= {TARGET}x -> {verdict}")
    # Robust to other load: the floor's CPU per image over the conversion's (1.0: no work beyond the floor's).
    print(f"floor / conversion CPU per image: {cpu['floor'] / cpu['conversion']:.2f}x")
    print(f"conversion / one process: {best['conversion'] / best['one process']:.2f}x")


if __name__ == "__main__":
    main()
