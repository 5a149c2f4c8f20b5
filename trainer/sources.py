"""Where images come from: a tfds dataset, a folder of class sub-folders, or generated (synthetic) images."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from trainer.errors import TrainerError

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
SYNTHETIC_CLASSES = ["cats", "dogs"]
# Ellipse colour per class in generated images: warm, cool, then more for tests with more classes.
PALETTE = ((220, 90, 40), (40, 90, 220), (60, 200, 60), (220, 200, 40), (160, 60, 200))
DEFAULT_TFDS_NAME = "cats_vs_dogs"
# TFDS's conventional name for a held-out split meant for model selection (e.g. cassava's).
TFDS_VALID_SPLIT = "validation"
TFDS_CATALOG = "https://www.tensorflow.org/datasets/catalog/overview"


@dataclass(frozen=True)
class Item:
    key: str  # stable identity (file path, tfds index, synthetic index): the split is decided on it
    label: int
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
    class_names = sorted(
        name.rstrip("/")
        for name in tf.io.gfile.listdir(folder)
        if tf.io.gfile.isdir(posixpath.join(folder, name))
    )
    if len(class_names) < 2:
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
            if f.lower().endswith(IMAGE_EXTENSIONS)
        )
        if not files:
            raise TrainerError(
                f"class folder {class_dir} holds no .jpg/.jpeg/.png files; add images or remove it"
            )
        items += [Item(path, label, _file_loader(path)) for path in files]
    return Source(class_names, _limit(items, count, len(class_names)))


def _file_loader(path: str) -> Callable[[], bytes]:
    def load() -> bytes:
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()

    return load


def from_tfds(name: str = DEFAULT_TFDS_NAME, count: int | None = None, valid_fraction: float = 0.2) -> Source:
    """A tfds image classification dataset (needs network access or a prepared TFDS_DATA_DIR).

    Uses the dataset's `validation` split where it has one (cassava does; cats_vs_dogs and tf_flowers have
    only `train`, which is then split here). `count` caps the training split, and round(count x
    valid_fraction) the validation split.
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
    builder.download_and_prepare()
    class_names = list(features["label"].names)
    train = _tfds_items(builder, name, "train")
    if TFDS_VALID_SPLIT not in builder.info.splits:
        return Source(class_names, _limit(train, count, len(class_names)))
    valid = _tfds_items(builder, name, TFDS_VALID_SPLIT)
    valid_count = None if count is None else max(1, round(count * valid_fraction))
    return Source(
        class_names,
        _limit(train, count, len(class_names)),
        _limit(valid, valid_count, len(class_names)),
    )


def _tfds_items(builder: object, name: str, split: str) -> list[Item]:
    """One split's examples as items holding the encoded image bytes (the split needs all labels first)."""
    import tensorflow_datasets as tfds

    ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
    return [
        Item(f"{name}:{split}:{i}", int(ex["label"]), _constant(bytes(ex["image"])))
        for i, ex in enumerate(tfds.as_numpy(ds))
    ]


def _constant(data: bytes) -> Callable[[], bytes]:
    return lambda: data


def synthetic(count: int, size: int, seed: int) -> Source:
    """Two classes told apart by the colour of an ellipse on a noisy background (a learnable difference)."""
    if count < 4:
        raise TrainerError(
            f"--count {count} is too small for a synthetic data set; use at least 4 (e.g. 400)"
        )
    items = [Item(f"synthetic:{i}", i % 2, _synthetic_loader(i, i % 2, size, seed)) for i in range(count)]
    return Source(list(SYNTHETIC_CLASSES), items)


def _synthetic_loader(index: int, label: int, size: int, seed: int) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        return synthetic_image(np.random.default_rng([seed, index]), label, size)

    return load


def synthetic_image(rng: np.random.Generator, label: int, size: int) -> np.ndarray:
    """A non-square image with an ellipse of the class's PALETTE colour (0 warm, 1 cool, ...), anywhere."""
    height = size
    width = int(size * rng.uniform(1.0, 1.5))  # non-square, so the aspect-ratio path is exercised
    image = rng.normal(110, 35, (height, width, 3))
    yy, xx = np.mgrid[0:height, 0:width]
    cy, cx = rng.uniform(0.3, 0.7) * height, rng.uniform(0.3, 0.7) * width
    ry, rx = rng.uniform(0.2, 0.4) * height, rng.uniform(0.2, 0.4) * width
    inside = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0
    colour = np.array(PALETTE[label]) + rng.normal(0, 20, 3)
    image[inside] = colour + rng.normal(0, 15, (int(inside.sum()), 3))
    return np.clip(image, 0, 255).astype(np.uint8)


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
