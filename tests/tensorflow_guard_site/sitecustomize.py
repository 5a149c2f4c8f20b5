"""Loaded at start-up by every Python process the test session starts (tests/tensorflow_rule.py puts this
folder first on PYTHONPATH; the session's own processes install it directly): a process that imports
TensorFlow leaves a record naming the test it was started under, so that a test that trains without the
`tensorflow` mark fails. Outside a test session (no VERTEX_TRAINING_TF_RECORDS) it does nothing."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

RECORDS_ENV = "VERTEX_TRAINING_TF_RECORDS"


class TensorFlowImportRecorder:
    """A meta-path finder that finds nothing: it only notes the first `import tensorflow` of its process."""

    vertex_training_tf_guard = True

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname != "tensorflow":
            return None
        sys.meta_path.remove(self)  # once per process
        records = os.environ.get(RECORDS_ENV)
        if records:
            record = {
                "pid": os.getpid(),
                "argv": getattr(sys, "orig_argv", sys.argv),
                # pytest sets it while a test runs; a child inherits the value of the moment it was started.
                "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
                "time": time.time(),
            }
            try:
                target_file = Path(records) / f"{os.getpid()}-{time.monotonic_ns()}.json"
                target_file.write_text(json.dumps(record))
            except OSError:
                pass  # the session that made the folder is gone: nothing to tell
        return None


def install() -> None:
    if not any(getattr(f, "vertex_training_tf_guard", False) for f in sys.meta_path):
        sys.meta_path.insert(0, TensorFlowImportRecorder())


if os.environ.get(RECORDS_ENV):
    install()
