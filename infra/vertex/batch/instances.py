"""The batch prediction's input: one JSON line per image, its URI as the key and its bytes as {"b64": ...}."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from google.cloud import storage  # type: ignore[attr-defined]  # google-cloud-storage has no py.typed

# Why JSON lines and not a file list: with `instances_format: file-list` Vertex sends each file as
# {"b64": ...} and its output lines carry only that instance, in no guaranteed order
# (googleapis/python-aiplatform#1166), and `InstanceConfig.key_field` "must be JSONL with objects at each
# line, CSV, BigQuery or TfRecord" (google/cloud/aiplatform/v1/batch_prediction_job.proto, read 2026-11-27).
# With `key_field`, "the values identified by the key field is not included in the transformed instances
# that is sent to the Model ... the output will only include the value of the key field, in a field named
# `key`": every output line is {"key": <image URI>, "prediction": ...}, without the image's bytes.
KEY_FIELD = "key"
# The exported model's input (trainer/export.py BYTES_INPUT): TF Serving's row format maps an instance
# object's fields to the signature's inputs by name and decodes {"b64": ...} into the string's bytes.
IMAGE_INPUT = "image_bytes"


def instance_line(uri: str, encoded: bytes) -> str:
    """One JSONL line: the image's URI as the key, its bytes base64-encoded for the model input."""
    return json.dumps({KEY_FIELD: uri, IMAGE_INPUT: {"b64": base64.b64encode(encoded).decode("ascii")}})


def _reader(images: list[str]) -> Iterable[tuple[str, bytes]]:
    """(uri, bytes) of each image in turn (one storage client for all gs:// reads)."""
    client = storage.Client() if any(image.startswith("gs://") for image in images) else None
    for image in images:
        if image.startswith("gs://") and client is not None:
            bucket, _, name = image.removeprefix("gs://").partition("/")
            yield image, client.bucket(bucket).blob(name).download_as_bytes()
        else:
            yield image, Path(image).read_bytes()


def write_instances(images: list[str], target: str) -> int:
    """Write the instances of `images` to `target` (a local path or gs://), one image in memory at a time
    (a line: the image's size x 4/3, base64, plus its URI and about 40 bytes of JSON); returns the bytes."""
    local = not target.startswith("gs://")
    folder = Path(target).expanduser().parent if local else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=".instances-", suffix=".partial", dir=folder)
    try:
        with os.fdopen(handle, "w") as out:
            for uri, encoded in _reader(images):
                out.write(instance_line(uri, encoded) + "\n")
            size = out.tell()
        if local:
            os.replace(partial, Path(target).expanduser())
        else:
            bucket, _, name = target.removeprefix("gs://").partition("/")
            blob = storage.Client().bucket(bucket).blob(name)
            # google-cloud-storage's upload_from_filename streams it from disk.
            blob.upload_from_filename(partial, content_type="application/jsonl")
        return size
    finally:
        if os.path.exists(partial):
            os.remove(partial)
