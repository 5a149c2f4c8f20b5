"""Decode, resize and encode on every core: a pool of worker processes whose results come back in order.

Why processes (measured 2026-11-25 on this 2-core machine, 256 of benchmarks/data_prep.py's photographs, best
of 4 alternating rounds): a process pool and a thread pool both made 642 images/s (one process: 420); a
tf.data parallel map over the same PIL code in `tf.py_function` made 587. On 2 cores they tie, but 16-27 % of
the per-image time holds the GIL (pure-Python JPEG header, EXIF and chunk loops in PIL: a spinning Python
thread kept only 73-84 % of its speed beside a converting one), which caps threads, and tf.data's py_function
with them, at about 4-6 cores; the stack's data machines have 4 and 8. tf.data's own decode/resize/encode ops
would store different pixels (another bicubic kernel, no EXIF rotation), so they are not the same work.

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
