"""Data preparation keys: what the data job produces (any change reruns both jobs)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.config.reader import ConfigError, Reader, positive, set_fix

# none: no data-preparation job; the trainer reads what it likes (dataDir, if set, fills {data_dir}).
DATA_SOURCES = ("synthetic", "folder", "tfds", "none")
# A TFDS name: `name`, optionally `/config` and `:version` (tfds.core.naming).
_TFDS_NAME = re.compile(r"^[a-z][a-z0-9_]*(/[a-zA-Z0-9_.-]+)?(:[0-9.*]+)?$")
KEYS = (
    "dataSource",
    "dataFolder",
    "dataCount",
    "imageSize",
    "dataSeed",
    "tfdsName",
    "dataDir",
    "dataReplicas",
)


@dataclass(frozen=True)
class DataConfig:
    """What the data-preparation job produces; any change here but `replicas` reruns both jobs."""

    source: str
    count: int | None
    image_size: int
    folder: str | None
    seed: int
    tfds_name: str | None = None
    dir: str | None = None  # dataSource none: data the trainer reads as it is
    # Machines converting in parallel (a chief, replicas-1 workers); the data is the same for any count.
    replicas: int = 1


def read_data(read: Reader, runner: str) -> DataConfig:
    source = read.str("dataSource", "synthetic", "synthetic", DATA_SOURCES)
    folder = read.str("dataFolder", None, "gs://my-bucket/images")
    if source == "folder" and not folder:
        raise ConfigError(
            "dataFolder",
            "is required when dataSource is folder",
            set_fix("dataFolder", "gs://my-bucket/images") + " (one sub-folder per class)",
        )
    if source != "folder" and folder:
        raise ConfigError("dataFolder", f"is only used with dataSource folder, not {source}", "remove it")
    if source == "folder" and runner == "vertex" and folder and not folder.startswith("gs://"):
        raise ConfigError(
            "dataFolder",
            f"{folder!r} is not readable by a cloud job",
            set_fix("dataFolder", "gs://my-bucket/images")
            + " (upload the folder with `gcloud storage cp -r`)",
        )
    count = read.number("dataCount", 400 if source == "synthetic" else None, int, "400")
    if count is not None:
        positive("dataCount", count, "400")
    image_size = read.number("imageSize", 224, int, "224")
    if not 32 <= image_size <= 512:
        raise ConfigError(
            "imageSize", f"must be between 32 and 512 pixels, got {image_size}", set_fix("imageSize", "224")
        )
    seed = read.number("dataSeed", 0, int, "0")
    tfds_name = read.str("tfdsName", None, "cassava")
    if tfds_name and source != "tfds":
        raise ConfigError("tfdsName", f"is only used with dataSource tfds, not {source}", "remove it")
    if tfds_name and not _TFDS_NAME.match(tfds_name):
        raise ConfigError(
            "tfdsName",
            f"{tfds_name!r} is not a TensorFlow Datasets name like cassava or tf_flowers",
            set_fix("tfdsName", "cassava") + " (https://www.tensorflow.org/datasets/catalog/overview)",
        )
    return DataConfig(
        source=source,
        count=count,
        image_size=image_size,
        folder=folder,
        seed=seed,
        tfds_name=tfds_name,
        dir=_data_dir(read, source, runner),
        replicas=_replicas(read, source),
    )


def _replicas(read: Reader, source: str) -> int:
    replicas = read.number("dataReplicas", 1, int, "2")
    positive("dataReplicas", replicas, "2")
    if replicas != 1 and source == "none":
        raise ConfigError(
            "dataReplicas", "is only used when the stack prepares data, not with dataSource none", "remove it"
        )
    return replicas


def _data_dir(read: Reader, source: str, runner: str) -> str | None:
    value = read.str("dataDir", None, "gs://my-bucket/data")
    if value and source != "none":
        raise ConfigError("dataDir", f"is only used with dataSource none, not {source}", "remove it")
    if value and runner == "vertex" and not value.startswith("gs://"):
        raise ConfigError(
            "dataDir",
            f"{value!r} is not readable by a cloud job",
            set_fix("dataDir", "gs://my-bucket/data") + " (upload it with `gcloud storage cp -r`)",
        )
    return value
