"""The metrics a finished job wrote to `<model_dir>/metrics.json` (a local path, or gs:// via Storage)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.cloud import storage

METRICS_FILE = "metrics.json"


def _read_text(uri: str) -> str | None:
    """The file's text, None when it does not exist. gs:// honours STORAGE_EMULATOR_HOST (the client does)."""
    if uri.startswith("gs://"):
        bucket, _, blob = uri.removeprefix("gs://").partition("/")
        # Storage clients are cheap to make and not kept: the provider holds no clients between calls.
        found = storage.Client().bucket(bucket).get_blob(blob)
        return None if found is None else found.download_as_text()
    path = Path(uri).expanduser()
    return path.read_text() if path.is_file() else None


def read_metrics(model_dir: str) -> dict[str, Any] | None:
    """metrics.json under `model_dir` as a dict; None when the job wrote none. Errors propagate."""
    text = _read_text(model_dir.rstrip("/") + "/" + METRICS_FILE)
    if text is None:
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else None
