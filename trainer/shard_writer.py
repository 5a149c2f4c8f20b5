"""Writes a replica's shards: records made on every core, written in the plan's order, and each
shard finished (closed, renamed, marked done) on a thread, so shard uploads run while conversion goes on."""

from __future__ import annotations

import logging
import posixpath
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import tensorflow as tf

from trainer import shard_files
from trainer.conversion import Converted, Result, Work
from trainer.progress import Progress
from trainer.shard_plan import Shard

log = logging.getLogger("trainer.create_tfrecords")

# Shards closing at once: on gs:// closing uploads the shard, which should not stall the conversion.
FINISHING_THREADS = 4


def write_shards(
    shards: list[Shard],
    output: str,
    fingerprint: str,
    class_names: list[str],
    convert: Callable[[Iterable[Work]], Iterator[Result]],
    progress: Progress,
) -> None:
    results = convert((item.load, item.label) for shard in shards for item in shard.items)
    with ThreadPoolExecutor(FINISHING_THREADS, thread_name_prefix="finish-shard") as finishers:
        finishing: list[Future] = []
        for shard in shards:
            writer, tmp, counts = _write(shard, output, class_names, results, progress)
            finishing.append(finishers.submit(_finish, writer, tmp, output, shard.name, fingerprint, counts))
            for done in [f for f in finishing if f.done()]:
                done.result()  # an upload that failed stops the run now, not at the end
                finishing.remove(done)
        for future in finishing:
            future.result()


def _write(
    shard: Shard,
    output: str,
    class_names: list[str],
    results: Iterator[Result],
    progress: Progress,
) -> tuple[tf.io.TFRecordWriter | None, str, shard_files.ShardCounts]:
    """The shard's records into a temporary file (none if every image is unreadable)."""
    tmp = shard_files.temporary(posixpath.join(output, shard.name))
    writer = None
    counts: Counter = Counter()
    skipped = 0
    try:
        for item in shard.items:
            result = next(results)
            if isinstance(result, Converted):
                writer = writer or tf.io.TFRecordWriter(tmp)
                writer.write(result.record)
                counts[class_names[item.label]] += 1
            else:
                log.warning("skipping unreadable image %s: %s", item.key, result.reason)
                skipped += 1
            progress.add()
    except BaseException:
        if writer is not None:
            writer.close()
            tf.io.gfile.remove(tmp)
        raise
    return writer, tmp, shard_files.ShardCounts(dict(counts), skipped)


def _finish(
    writer: tf.io.TFRecordWriter | None,
    tmp: str,
    output: str,
    name: str,
    fingerprint: str,
    counts: shard_files.ShardCounts,
) -> None:
    if writer is not None:
        writer.close()
        shard_files.publish(tmp, posixpath.join(output, name))
    shard_files.mark_done(output, name, fingerprint, counts)
