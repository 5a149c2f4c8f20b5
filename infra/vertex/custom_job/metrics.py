"""The metrics a finished job wrote to `<model_dir>/metrics.json` (a local path, or gs:// via Storage)."""

from __future__ import annotations

import json
from typing import Any

from infra.vertex.lifecycle.output_files import join, read_text

METRICS_FILE = "metrics.json"


def read_metrics(model_dir: str) -> dict[str, Any] | None:
    """metrics.json under `model_dir` as a dict; None when the job wrote none. Errors propagate."""
    text = read_text(join(model_dir, METRICS_FILE))
    if text is None:
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else None
