"""Where images come from: a tfds dataset, a folder of class sub-folders, or generated (synthetic) images."""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from trainer import loaders
from trainer.errors import TrainerError

if TYPE_CHECKING:
    import tensorflow_datasets as tfds

log = logging.getLogger("trainer.sources")

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
SYNTHETIC_CLASSES = ["cats", "dogs"]
# Hidden entries (.ipynb_checkpoints/, .DS_Store, ._IMG_1.jpg from macOS) are never classes or images.
HIDDEN_PREFIX = "."
# How many skipped hidden entries the one line about them names.
SHOWN_HIDDEN = 5
# TFDS's conventional name for a held-out split meant for model selection (e.g. cassava's).
TFDS_VALID_SPLIT = "validation"
TFDS_CATALOG = "https://www.tensorflow.org/datasets/catalog/overview"


@dataclass(frozen=True)
class Item:
    key: str  # stable identity (file path, tfds index, synthetic index): the split is decided on it
    label: int
    # Picklable (a trainer.loaders function in a partial): the conversion calls it in a worker process.
    load: Callable[[], bytes | np.ndarray]


@dataclass
class Source:
    class_names: list[str]
    items: list[Item]
    # The dataset's own validation split, if it has one: then `items` is its training split, not split again.
    valid_items: list[Item] | None = None


def from_folder(folder: str, count: int | None = None) -> Source:
    """One sub-folder per class; class index = sorted sub-folder order; JPEG and PNG files."""
    if not tf.io.gfile.isdir(folder):
        raise TrainerError(
            f"--folder {folder} does not exist or is not a directory; pass a folder with one "
            "sub-folder of images per class (e.g. cats/ and dogs/)"
        )
    hidden: list[str] = []
    class_names = sorted(
        name
        for name in (entry.rstrip("/") for entry in tf.io.gfile.listdir(folder))
        if tf.io.gfile.isdir(posixpath.join(folder, name)) and _visible(name, name + "/", hidden)
    )
    if len(class_names) < 2:
        _log_hidden(hidden)
        raise TrainerError(
            f"--folder {folder} has {len(class_names)} class sub-folder(s); it needs one "
            "sub-folder per class, at least two (e.g. cats/ and dogs/)"
        )
    items = []
    for label, name in enumerate(class_names):
        class_dir = posixpath.join(folder, name)
        files = sorted(
            posixpath.join(class_dir, f)
            for f in tf.io.gfile.listdir(class_dir)
            if f.lower().endswith(IMAGE_EXTENSIONS) and _visible(f, f"{name}/{f}", hidden)
        )
        if not files:
            _log_hidden(hidden)
            raise TrainerError(
                f"class folder {class_dir} holds no .jpg/.jpeg/.png files; add images or remove it"
            )
        if len(files) < 2:
            raise TrainerError(
                f"class folder {class_dir} holds 1 image; every class needs at least two (one for training, "
                "one for validation): add images or remove the class"
            )
        items += [Item(path, label, partial(loaders.read_file, path)) for path in files]
    _log_hidden(hidden)
    check_count(count, len(class_names))
    return Source(class_names, _limit(items, count, len(class_names)))


def _visible(name: str, shown: str, hidden: list[str]) -> bool:
    """False for a hidden entry, which is added to `hidden` as `shown` (for the one line about them)."""
    if name.startswith(HIDDEN_PREFIX):
        hidden.append(shown)
        return False
    return True


def _log_hidden(hidden: list[str]) -> None:
    if hidden:
        more = f" and {len(hidden) - SHOWN_HIDDEN} more" if len(hidden) > SHOWN_HIDDEN else ""
        log.info(
            "skipped %d hidden entr%s (never classes or images): %s%s",
            len(hidden),
            "y" if len(hidden) == 1 else "ies",
            ", ".join(hidden[:SHOWN_HIDDEN]),
            more,
        )


def check_count(count: int | None, num_classes: int) -> None:
    """--count must leave every class one training and one validation image."""
    if count is not None and count < 2 * num_classes:
        raise TrainerError(
            f"--count {count} is too small for {num_classes} classes: every class needs at least one "
            f"training and one validation image, so use --count {2 * num_classes} or more (or leave --count "
            "out to use every image)"
        )


def from_tfds(name: str, count: int | None = None, valid_fraction: float = 0.2) -> Source:
    """A tfds image classification dataset (needs network access or a prepared TFDS_DATA_DIR).

    Uses the dataset's `validation` split where it has one (cassava does; cats_vs_dogs and tf_flowers have
    only `train`, which is then split here). `count` caps the training split, and round(count x
    valid_fraction), at least one per class, the validation split.
    """
    import tensorflow_datasets as tfds

    try:
        builder = tfds.builder(name)
    except tfds.core.registered.DatasetNotFoundError:
        raise TrainerError(
            f"--tfds-name {name!r} is not a TensorFlow Datasets dataset; pick an image classification one "
            f"from {TFDS_CATALOG}, e.g. cats_vs_dogs, cassava or tf_flowers"
        ) from None
    features = builder.info.features
    if not {"image", "label"} <= set(features.keys()) or not hasattr(features["label"], "names"):
        raise TrainerError(
            f"--tfds-name {name!r} is not an image classification dataset (it needs an `image` and a class "
            f"`label` feature); pick one from {TFDS_CATALOG}"
        )
    class_names = list(features["label"].names)
    check_count(count, len(class_names))
    builder.download_and_prepare()
    train = _tfds_items(builder, name, "train")
    if TFDS_VALID_SPLIT not in builder.info.splits:
        return Source(class_names, _limit(train, count, len(class_names)))
    valid = _tfds_items(builder, name, TFDS_VALID_SPLIT)
    # At least one validation image per class, as the folder split gives (check_count left room for them).
    valid_count = None if count is None else max(len(class_names), round(count * valid_fraction))
    return Source(
        class_names,
        _limit(train, count, len(class_names)),
        _limit(valid, valid_count, len(class_names)),
    )


def _tfds_items(builder: tfds.core.DatasetBuilder, name: str, split: str) -> list[Item]:
    """One split's examples as items holding the encoded image bytes (the split needs all labels first)."""
    import tensorflow_datasets as tfds

    ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
    return [
        Item(f"{name}:{split}:{i}", int(ex["label"]), partial(loaders.constant, bytes(ex["image"])))
        for i, ex in enumerate(tfds.as_numpy(ds))
    ]


def synthetic(count: int, size: int, seed: int) -> Source:
    """Two classes told apart by the colour of an ellipse on a noisy background (a learnable difference)."""
    if count < 4:
        raise TrainerError(
            f"--count {count} is too small for a synthetic data set; use at least 4 (e.g. 400)"
        )
    items = [
        Item(f"synthetic:{i}", i % 2, partial(loaders.synthetic, i, i % 2, size, seed)) for i in range(count)
    ]
    return Source(list(SYNTHETIC_CLASSES), items)


def _limit(items: list[Item], count: int | None, num_classes: int) -> list[Item]:
    """At most `count` items, taken evenly across classes (deterministic: the first ones of each class)."""
    if count is None or count >= len(items):
        return items
    per_class = [[it for it in items if it.label == c] for c in range(num_classes)]
    kept: list[Item] = []
    i = 0
    while len(kept) < count:
        for group in per_class:
            if i < len(group) and len(kept) < count:
                kept.append(group[i])
        i += 1
    return kept
