"""metadata.json: what a TFRecords data dir holds (counts per split and class, image size, class names)."""

from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass, field

import tensorflow as tf

from trainer.errors import LOCAL_PYTHON, TrainerError
from trainer.sources import IMAGE_EXTENSIONS

FILENAME = "metadata.json"
SPLITS = ("train", "valid")


@dataclass
class Metadata:
    image_size: int
    class_names: list[str]
    # counts[split][class_name] = number of images written
    counts: dict[str, dict[str, int]]
    skipped: int = 0
    source: str = ""
    seed: int = 0
    valid_fraction: float = 0.0
    # "validation" when the valid split is the source dataset's own (tfds), else "" (split here by fraction).
    valid_split: str = ""
    storage: str = "jpeg, shorter side resized to image_size, aspect ratio kept, no augmentation"
    shards: dict[str, int] = field(default_factory=dict)
    # Identifies the conversion (trainer/shard_plan.py): a re-run of the same one finds its data set complete.
    fingerprint: str = ""

    def total(self, split: str) -> int:
        return sum(self.counts.get(split, {}).values())


def record_pattern(data_dir: str, split: str) -> str:
    return posixpath.join(data_dir, f"{split}-*.tfrec")


def dumps(meta: Metadata) -> str:
    """The file's text (trainer/shard_files.py writes it whole or not at all)."""
    return json.dumps(asdict(meta), indent=2, sort_keys=True) + "\n"


def holds_images(folder: str) -> bool:
    """Whether `folder` holds image files, or sub-folders that do (a `--source folder` layout)."""
    if not tf.io.gfile.isdir(folder):
        return False
    for entry in tf.io.gfile.listdir(folder):
        path = posixpath.join(folder, entry.rstrip("/"))
        if entry.lower().endswith(IMAGE_EXTENSIONS):
            return True
        if tf.io.gfile.isdir(path) and any(
            f.lower().endswith(IMAGE_EXTENSIONS) for f in tf.io.gfile.listdir(path)
        ):
            return True
    return False


def tfrecords_dir_for(image_folder: str) -> str:
    """A place for an image folder's TFRecords beside it (never inside it): `<folder>-tfrecords`."""
    return image_folder.rstrip("/") + "-tfrecords"


def read(data_dir: str) -> Metadata:
    """Reads and checks a data dir's metadata; errors name the command that creates it."""
    path = posixpath.join(data_dir, FILENAME)
    if not tf.io.gfile.exists(path):
        if holds_images(data_dir):
            # Converted into a folder of their own: an --output inside the image folder would be read as a
            # class folder by the next conversion.
            output = tfrecords_dir_for(data_dir)
            raise TrainerError(
                f"--data-dir {data_dir} holds images, not TFRecords. Convert them once, into a folder "
                f"outside this one: `{LOCAL_PYTHON} -m trainer.create_tfrecords --source folder "
                f"--folder {data_dir} --output {output} --image-size 224` (one sub-folder per class; 224 is "
                "DenseNet121's own size, smaller trains faster), then "
                f"train with --data-dir {output}."
            )
        raise TrainerError(
            f"--data-dir {data_dir}: no {FILENAME} there. Create the data first with "
            f"`{LOCAL_PYTHON} -m trainer.create_tfrecords --source folder --folder <your-images> "
            f"--output {data_dir} --image-size 224`, "
            "or point --data-dir at a directory it wrote."
        )
    try:
        with tf.io.gfile.GFile(path) as f:
            meta = Metadata(**json.load(f))
    except (json.JSONDecodeError, TypeError) as exc:
        raise TrainerError(f"{path} is not a trainer metadata file ({exc}); recreate the data") from exc
    for split in SPLITS:
        if meta.total(split) == 0 or not tf.io.gfile.glob(record_pattern(data_dir, split)):
            raise TrainerError(
                f"--data-dir {data_dir}: no {split} images ({split}-*.tfrec). Recreate the data with "
                "more images or a --valid-fraction that leaves some in each split."
            )
    return meta
