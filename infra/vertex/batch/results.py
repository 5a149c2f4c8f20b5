"""A batch prediction's output read back: one row per image (its classes, or why it failed), from the files
Vertex writes and the local runner writes alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.cloud import storage  # type: ignore[attr-defined]  # google-cloud-storage has no py.typed

from infra.vertex.lifecycle.output_files import subdirectories

# Result lines are {"key": <image>, "prediction": {...}} (instances.py: `key_field`); the prediction is the
# exported model's batch signature in TF Serving's row format: `top_class`, `classes` and `probabilities`
# (most probable first) and `error` ("" or why the image could not be read: trainer/export.py). Error lines
# are {"key": <image>, "error": {"code", "message"}} (aiplatform_v1 OutputConfig.gcs_destination: failed
# instances "followed by an additional `error` field which as value has google.rpc.Status containing only
# `code` and `message` fields", read 2026-11-27).
RESULTS_PREFIX = "prediction.results-"
ERRORS_PREFIX = "prediction.errors_stats-"
PREDICTIONS_PREFIX = "prediction-"  # Vertex's directory per job: prediction-<model>-<create time>


@dataclass(frozen=True)
class Row:
    image: str
    classes: tuple[tuple[str, float], ...] = ()  # (class name, probability), most probable first
    error: str = ""

    @property
    def top(self) -> tuple[str, float] | None:
        return self.classes[0] if self.classes else None


def row(line: dict[str, Any]) -> Row:
    """The row of one output line (a result or an error)."""
    image = str(line.get("key", "?"))
    if "error" in line:
        error = line["error"]
        return Row(image, error=str(error.get("message", error) if isinstance(error, dict) else error))
    prediction = line.get("prediction")
    if not isinstance(prediction, dict) or "classes" not in prediction:
        return Row(image, error="the prediction has no class names (a model this trainer did not export)")
    if prediction.get("error"):
        return Row(image, error=str(prediction["error"]))
    pairs = zip(prediction["classes"], prediction["probabilities"], strict=True)
    return Row(image, tuple((str(name), float(p)) for name, p in pairs))


def _files(predictions_dir: str, prefix: str) -> list[str]:
    if predictions_dir.startswith("gs://"):
        bucket, _, name = predictions_dir.removeprefix("gs://").partition("/")
        blobs = storage.Client().list_blobs(bucket, prefix=name.rstrip("/") + "/" + prefix)
        return sorted(f"gs://{bucket}/{blob.name}" for blob in blobs)
    return sorted(str(p) for p in Path(predictions_dir).expanduser().glob(prefix + "*"))


def _lines(uri: str) -> Iterator[dict[str, Any]]:
    if uri.startswith("gs://"):
        bucket, _, name = uri.removeprefix("gs://").partition("/")
        text = storage.Client().bucket(bucket).blob(name).download_as_text()
        lines: Iterator[str] = iter(text.splitlines())
    else:
        lines = iter(Path(uri).read_text().splitlines())
    for line in lines:
        if line.strip():
            yield json.loads(line)


def rows(predictions_dir: str) -> Iterator[Row]:
    """Every image's row: the results files', then the error files'."""
    for prefix in (RESULTS_PREFIX, ERRORS_PREFIX):
        for uri in _files(predictions_dir, prefix):
            yield from (row(line) for line in _lines(uri))


def unread_in_results(predictions_dir: str) -> int:
    """How many result lines say the model could not read their image: Vertex counts them successful (the
    container answered), a user counts them failed."""
    return sum(
        1
        for uri in _files(predictions_dir, RESULTS_PREFIX)
        for line in _lines(uri)
        if isinstance(line.get("prediction"), dict) and line["prediction"].get("error")
    )


def newest_predictions(directory: str) -> str:
    """`directory` itself if it holds results, else its newest prediction-* folder (an output_dir)."""
    if _files(directory, RESULTS_PREFIX) or _files(directory, ERRORS_PREFIX):
        return directory
    found = [d for d in subdirectories(directory) if d.rsplit("/", 1)[-1].startswith(PREDICTIONS_PREFIX)]
    # The folder name ends with the job's create time, YYYY-MM-DDThh:mm:ss.sssZ (24 characters).
    return max(found, key=lambda d: d[-24:], default=directory)
