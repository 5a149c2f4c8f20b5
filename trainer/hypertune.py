"""Reports the tuned metric the way Vertex AI hyperparameter tuning reads it from a custom container.

The format is cloudml-hypertune's (GoogleCloudPlatform/cloudml-hypertune, hypertune/hypertune.py, read
2026-11-22): on each report the file named by CLOUD_ML_HP_METRIC_FILE (default /tmp/hypertune/output.metrics)
is rewritten with the last 100 reports, one JSON object per line with sorted keys: `{"global_step": "<int>",
"<metric tag>": "<float>", "timestamp": <float>, "trial": "<CLOUD_ML_TRIAL_ID or 0>"}`.
Written here instead of depending on the library: it is those few lines, and one pinned dependency fewer in
the image. The stack names the study's metric in CLOUD_ML_HP_METRIC_TAG (the name Google's Vertex NAS client
says it sets in trial containers for this; Vertex tuning documents none, so the stack sets it); without it the
trainer reports nothing.
"""

from __future__ import annotations

import collections
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

import tf_keras as keras

METRIC_TAG_ENV = "CLOUD_ML_HP_METRIC_TAG"
METRIC_FILE_ENV = "CLOUD_ML_HP_METRIC_FILE"
DEFAULT_METRIC_FILE = "/tmp/hypertune/output.metrics"
MAX_REPORTS = 100


class Reporter:
    """Appends reports of one metric to the hypertune metrics file (keeping the last 100, as the library)."""

    def __init__(self, tag: str, path: str, trial_id: str):
        self.tag, self.path, self.trial_id = tag, Path(path), trial_id
        self.reports: collections.deque[dict] = collections.deque(maxlen=MAX_REPORTS)

    def report(self, value: float, step: int) -> None:
        self.reports.append(
            {
                "timestamp": time.time(),
                "trial": self.trial_id,
                self.tag: str(float(value)),
                "global_step": str(int(step)),
            }
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in self.reports))


def from_env(env: Mapping[str, str] = os.environ) -> Reporter | None:
    """The reporter a tuning trial asks for, or None outside a study."""
    tag = env.get(METRIC_TAG_ENV)
    if not tag:
        return None
    return Reporter(tag, env.get(METRIC_FILE_ENV, DEFAULT_METRIC_FILE), env.get("CLOUD_ML_TRIAL_ID", "0"))


class ReportMetric(keras.callbacks.Callback):
    """Once per epoch: the study's metric from the epoch's logs (val_accuracy, val_loss, accuracy, loss)."""

    def __init__(self, reporter: Reporter):
        super().__init__()
        self.reporter = reporter

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        value = (logs or {}).get(self.reporter.tag)
        if value is not None:
            self.reporter.report(value, epoch + 1)
