"""Decode, resize, encode and serialize on every core: a pool of worker processes whose records come back in
order, so the main process only writes bytes.

Why processes (`benchmarks/data_prep.py --executors`, this 2-core machine quiet, load average 1.0, 2026-11-25,
512 photographs, best of 4): a process pool made 669 images/s, a thread pool 648, a tf.data parallel map over
the same PIL code in `tf.py_function` 554, one process 417. Processes were the fastest and their scaling does
not depend on how much of the work releases the GIL; threads' does (a conversion of these JPEGs holds it 4 %
of its time, which Amdahl's law lets reach about 25 cores; pure-Python parts of PIL such as header, EXIF and
chunk loops hold it, more so for other formats). tf.data's own decode/resize/encode ops would store other
pixels (another bicubic kernel, no EXIF rotation): not the same work.

Workers come from a fork server that preloads only this module (PIL and numpy, no TensorFlow): a fork of a
process that has started TensorFlow is not safe, and a spawned worker would import it again.

Files behind a URI (gs://) are read ahead on threads of this process (READS_PER_WORKER per worker), and the
workers get their bytes: a worker never waits on remote storage. On a Vertex replica the folder source is
gs://, where each read first waits for the object's first byte; a worker reading its own files would idle
that long per image, and would import TensorFlow (its gs:// filesystem) besides. TensorFlow's file reads
release the GIL (a spinning Python thread kept its speed while another read through tf.io.gfile, measured
here 2026-11-26), so threads overlap the waits. `benchmarks/data_prep.py --read-latency-ms` measures it.
Local files are read by the worker that converts them: a local read does not wait for a first byte, and
sending a camera photo's bytes through the pool's pipe made this process read, pickle and write every byte
and the worker unpickle it: this process's CPU per 12 MP photo of 0.95 MB went from 2.5-3.6 ms to 1.2-1.8 ms
when workers read local files themselves (64 photos of benchmarks/data_prep.py --camera, 2026-11-27; what is
left is mostly the content stamps' SHA-256, trainer/image_stamps.py).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import islice

import numpy as np

from trainer import example_proto, loaders
from trainer.images import UnreadableImage, to_stored_jpeg

# A task (the items sent to a worker at once) holds about this many seconds of work: enough to amortize the
# pipe round trip, little enough that the end of a run or one slow worker leaves no core idle for long. On
# 500x375 photos that is CHUNK items; on 12 MP camera photos, two.
CHUNK_SECONDS = 0.05
# Items per task at most: 16 (was 4) brought the conversion's CPU per image from 1.12x to 1.05x the floor's
# on 500x375 photos (benchmarks/data_prep.py, 1,024 photographs, 2026-11-26; one run each on the shared
# 2-core machine).
CHUNK = 16
# Tasks in flight per worker: enough that no worker waits for the next one while results are taken in order,
# few enough that memory (the loaders sent, the records back) stays bounded whatever the size of the data set.
TASKS_PER_WORKER = 4
# Files being read at once per worker: enough to hide a gs:// read's wait for its first byte behind the
# conversions (a benchmark figure, not a guarantee; see benchmarks/data_prep.py --read-latency-ms).
READS_PER_WORKER = 16


@dataclass(frozen=True)
class Converted:
    record: bytes  # the serialized tf.train.Example (trainer/records.py's schema)


@dataclass(frozen=True)
class Unreadable:
    reason: str


# glibc's malloc: `mallopt` parameters (malloc.h) and the values its own dynamic thresholds reach once a
# process has freed a 32 MiB buffer (mallopt(3): the mmap threshold rises to a freed mmapped chunk's size, up
# to DEFAULT_MMAP_THRESHOLD_MAX, 32 MiB on 64-bit systems, and the trim threshold to twice it). A fresh worker
# starts at 128 KiB: each decoded photo's buffers were mapped and returned to the system again, about 2,000
# page faults per 12 MP photo and a fifth of its CPU time (25 vs 32 ms; from the start: 95 faults; measured
# here 2026-11-27). The floor's long-lived workers had got there by themselves.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
_TRIM_THRESHOLD_BYTES = 2 * _MMAP_THRESHOLD_BYTES

Result = Converted | Unreadable
Loader = Callable[[], bytes | np.ndarray]
# What a worker gets per image: how to load it, and its label (it goes into the record).
Work = tuple[Loader, int]


def default_workers() -> int:
    """Every core this process may run on (a container's CPU set, not the host's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def keep_freed_memory() -> bool:
    """A worker's initializer: freed image buffers stay in its heap for the next photo (glibc only; elsewhere
    the allocator keeps its own policy). Whether glibc took the settings."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(
            libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
            and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES)
        )
    except (OSError, AttributeError):
        return False


def convert(item: Work, image_size: int) -> Result:
    """One image's record; bytes that do not decode, or a file gone since the listing, are Unreadable.

    Any other read error (a permission, a storage or network error) is raised: it fails the replica, and
    the re-run redoes that shard, instead of storing a readable image as skipped for good.
    """
    load, label = item
    try:
        data = load()
    except FileNotFoundError as exc:
        return Unreadable(f"gone since the source was listed ({exc})")
    try:
        jpeg, height, width = to_stored_jpeg(data, image_size)
    except UnreadableImage as exc:
        return Unreadable(str(exc))
    return Converted(example_proto.serialize(jpeg, label, height, width))


def convert_chunk(items: list[Work], image_size: int) -> tuple[list[Result], float]:
    """The items' results, and the seconds they took (the next tasks are sized by it)."""
    start = time.perf_counter()
    results = [convert(item, image_size) for item in items]
    return results, time.perf_counter() - start


def chunk_size(seconds_per_item: float) -> int:
    """Items per task for about CHUNK_SECONDS of work, 1 to CHUNK."""
    return max(1, min(CHUNK, round(CHUNK_SECONDS / max(seconds_per_item, 1e-6))))


def bounded_map(
    pool: Executor,
    work: Callable[[list[Work]], tuple[list[Result], float]],
    items: Iterable[Work],
    window: int,
) -> Iterator[Result]:
    """`work` over chunks of `items`, in order, with at most `window` chunks submitted at once.

    The first chunks hold one item each; later ones are sized by the time the last one took (chunk_size).
    Executor.map would take every item and submit every chunk up front, all of one size.
    """
    it = iter(items)
    pending: deque[Future] = deque()

    def submit(size: int) -> None:
        if chunk := list(islice(it, size)):
            pending.append(pool.submit(work, chunk))

    for _ in range(window):
        submit(1)
    while pending:
        results, seconds = pending.popleft().result()
        submit(chunk_size(seconds / len(results)))
        yield from results


def reads_remote(load: Loader) -> bool:
    """A loader that reads a URI (gs://...): it waits on storage, and only this process imports TensorFlow."""
    return isinstance(load, partial) and load.func is loaders.read_file and "://" in load.args[0]


def _read(load: Loader) -> Loader:
    """The file's bytes, as a loader of them; a file gone since the listing, as a loader that says so."""
    try:
        return partial(loaders.constant, load())
    except FileNotFoundError as exc:
        return partial(loaders.gone, str(exc))


def read_ahead(reading: Executor, items: Iterable[Work], window: int) -> Iterator[Work]:
    """`items` in order, each URI-reading loader replaced by its bytes, read on `reading`'s threads at most
    `window` items ahead. Any read error but a missing file is raised here: it fails the run."""
    pending: deque[tuple[Future | Loader, int]] = deque()
    it = iter(items)

    def top_up() -> None:
        while len(pending) < window and (item := next(it, None)):
            load, label = item
            pending.append((reading.submit(_read, load) if reads_remote(load) else load, label))

    top_up()
    while pending:
        head, label = pending.popleft()
        top_up()
        yield (head.result() if isinstance(head, Future) else head), label


@contextmanager
def converter(workers: int, image_size: int) -> Iterator[Callable[[Iterable[Work]], Iterator[Result]]]:
    """A function mapping items to results in their order, on `workers` processes (1: in this process)."""
    readers = READS_PER_WORKER * workers
    with ThreadPoolExecutor(readers, thread_name_prefix="read") as reading:
        if workers == 1:
            one = partial(convert, image_size=image_size)
            yield lambda items: map(one, read_ahead(reading, items, readers))
            return
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=keep_freed_memory)
        work = partial(convert_chunk, image_size=image_size)
        try:
            yield lambda items: bounded_map(
                pool, work, read_ahead(reading, items, readers), workers * TASKS_PER_WORKER
            )
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
