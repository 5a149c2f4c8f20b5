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

--executors instead compares ways to spread the same conversion over the cores (why trainer/conversion.py
uses processes): a process pool, a thread pool, and a tf.data parallel map over the same PIL code in
tf.py_function; plus how much of one conversion holds the GIL (a spinning Python thread's speed beside a
converting one, against its speed alone).

The images are 500x375 JPEG views (Cats vs Dogs size) of the colour photographs scikit-image ships. Rounds
alternate (in turn reversed), and the best of each is kept, so load from other processes hits all alike; the
load average is printed with the figures.

    .venv/bin/python benchmarks/data_prep.py [--images 1024] [--rounds 5] [--workers N] [--executors]
        [--read-latency-ms 50]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import Executor, ProcessPoolExecutor
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


def convert_file(path: str, latency: float = 0.0) -> int:
    """The floor's per-image work: read, decode, EXIF transpose, RGB, resize, JPEG encode; nothing kept.
    `latency`: the read first waits that long (a worker reading its own gs:// file)."""
    from trainer.images import to_stored_jpeg

    time.sleep(latency)
    with open(path, "rb") as f:
        return len(to_stored_jpeg(f.read(), SIZE)[0])


def floor_seconds(paths: list[str], pool: Executor, workers: int, latency: float = 0.0) -> float:
    """The same per-image work on a started process pool of every core, each worker a contiguous share of
    the files, nothing written and nothing but a length sent back: the machine's speed at this work."""
    start = time.perf_counter()
    work = partial(convert_file, latency=latency)
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
    """Every file read of the conversion first waits `latency` seconds, as a gs:// read waits for its first
    byte (the floor keeps reading local files: it is the machine's speed at the work, not the storage's)."""
    from trainer import loaders

    read = loaders.read_file

    def read_after_latency(path: str) -> bytes:
        time.sleep(latency)
        return read(path)

    loaders.read_file = read_after_latency


def conversion_seconds(folder: Path, output: Path, workers: int) -> float:
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


def main() -> None:
    from trainer.conversion import default_workers

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=5, help="alternating measurements; the best of each is kept")
    p.add_argument("--workers", type=int, default=default_workers())
    p.add_argument("--executors", action="store_true", help="compare processes, threads and tf.data instead")
    p.add_argument(
        "--read-latency-ms",
        type=float,
        default=0.0,
        help="the conversion's every file read first waits this long, as a gs:// read on a Vertex replica",
    )
    args = p.parse_args()
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
                ("conversion", partial(conversion_seconds, folder, output / "conversion", args.workers)),
                ("one process", partial(conversion_seconds, folder, output / "one-process", 1)),
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
