"""What each image file of a folder source holds, in a few bytes: the part of a conversion's fingerprint that
makes a changed image under the same name another data set (converted again).

A local file's stamp is the SHA-256 of its bytes. A remote one (gs://) is its size and modification time, one
metadata request each: a Cloud Storage object cannot change once written (new content is a new upload, with a
new `updated` time; Cloud Storage docs, "Objects", object immutability, read 2026-11-26), TensorFlow's GCS
filesystem reports that `updated` time as mtime (tensorflow/tsl `gcs_file_system.cc` StatForObject), and
reading every object's bytes here as well as in the conversion would double a remote conversion's reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import tensorflow as tf

# Files read or stat'ed at once: local reads and hashing release the GIL, remote stats wait on the network.
THREADS = 16
READ_CHUNK = 1024 * 1024


def stamp(path: str) -> str:
    """The file's content stamp; a file that cannot be read gets an empty one (the conversion reports it)."""
    try:
        if "://" in path:
            stat = tf.io.gfile.stat(path)
            return f"{stat.length}:{stat.mtime_nsec}"
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(READ_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()
    except (OSError, tf.errors.OpError):
        return ""


def stamps(paths: Sequence[str]) -> dict[str, str]:
    """Every path's stamp, read in parallel."""
    with ThreadPoolExecutor(THREADS) as pool:
        return dict(zip(paths, pool.map(stamp, paths), strict=True))
