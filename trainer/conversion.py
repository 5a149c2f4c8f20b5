"""Decode, resize and encode on every core: a pool of worker processes whose results come back in order.

Why processes (`benchmarks/data_prep.py --executors`, this 2-core machine quiet, load average 1.0, 2026-11-25,
512 photographs, best of 4): a process pool made 669 images/s, a thread pool 648, a tf.data parallel map over
the same PIL code in `tf.py_function` 554, one process 417. Processes were the fastest and their scaling does
not depend on how much of the work releases the GIL; threads' does (a conversion of these JPEGs holds it 4 %
of its time, which Amdahl's law lets reach about 25 cores; pure-Python parts of PIL such as header, EXIF and
chunk loops hold it, more so for other formats). tf.data's own decode/resize/encode ops would store other
pixels (another bicubic kernel, no EXIF rotation): not the same work.

Workers come from a fork server that preloads only this module (PIL and numpy, no TensorFlow): a fork of a
process that has started TensorFlow is not safe, and a spawned worker would import it again.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import numpy as np

from trainer.images import UnreadableImage, to_stored_jpeg

# Items per task sent to a worker: amortizes the pipe round trip, small enough to keep results in order.
CHUNK = 4


@dataclass(frozen=True)
class Converted:
    jpeg: bytes
    height: int
    width: int


@dataclass(frozen=True)
class Unreadable:
    reason: str


Result = Converted | Unreadable
Loader = Callable[[], bytes | np.ndarray]


def default_workers() -> int:
    """Every core this process may run on (a container's CPU set, not the host's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def convert(load: Loader, image_size: int) -> Result:
    """One image as stored; a file that cannot be read or decoded is Unreadable, never an exception."""
    try:
        return Converted(*to_stored_jpeg(load(), image_size))
    except (UnreadableImage, OSError) as exc:
        return Unreadable(str(exc))


@contextmanager
def converter(workers: int, image_size: int) -> Iterator[Callable[[Iterable[Loader]], Iterator[Result]]]:
    """A function mapping loaders to results in their order, on `workers` processes (1: in this process)."""
    work = partial(convert, image_size=image_size)
    if workers == 1:
        yield lambda loads: map(work, loads)
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        yield lambda loads: pool.map(work, loads, chunksize=CHUNK)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
