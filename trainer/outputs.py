"""Where each task writes: the chief to the real paths, other workers to temporary dirs they delete.

Under MultiWorkerMirroredStrategy every worker must take part in saving (saving may run collective ops), but
only the chief's copy is kept.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator

import tensorflow as tf

from trainer.distribute import Role


@contextlib.contextmanager
def write_dir(path: str, role: Role) -> Iterator[str]:
    """Yields `path` on the chief; elsewhere a fresh temporary dir, removed on exit."""
    if role.is_chief:
        tf.io.gfile.makedirs(path)
        yield path
        return
    tmp = tempfile.mkdtemp(prefix=f"trainer-{role.task_type}-{role.task_id}-")
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
