"""SavedModel export (two serving signatures, the class names as an asset), and metrics.json computed from
the exported model itself."""

from __future__ import annotations

import json
import math
import os
import posixpath
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras as keras

from trainer.distribute import Role
from trainer.outputs import write_dir

SIGNATURE_INPUT = "images"
SIGNATURE_OUTPUT = "probability"
# TF Serving's REST API (which Vertex's TensorFlow containers serve) decodes {"b64": ...} JSON values into a
# string input's bytes; "image_bytes" is the name Google's prediction examples give such an input (see
# docs/serving.md; read 2026-11-22).
BYTES_SIGNATURE = "serving_bytes"
BYTES_INPUT = "image_bytes"
# A second SavedModel inside the model dir whose serving_default takes image_bytes: Vertex batch prediction
# sends each instance, {"image_bytes": {"b64": ...}} (the job's keyed JSONL input), to the prebuilt
# TensorFlow container, which serves serving_default (docs/batch-prediction.md). The model dir's own
# serving_default stays the float-pixel contract.
BYTES_MODEL_DIR = "serving_bytes"
# What <model_dir>/serving_bytes/'s serving_default answers per image (TF Serving's row format makes each a
# field of the image's `prediction` in Vertex's output): the most probable class, every class name with its
# probability (most probable first, as `trainer.predict --json` ranks them), and "" or why the image could
# not be read. An image that does not decode fails alone: its `error` says so, the others are classified.
TOP_CLASS, CLASSES, PROBABILITIES, ERROR = "top_class", "classes", "probabilities", "error"
UNREADABLE = "not an image the model can read (JPEG or PNG): the file is corrupt, truncated or another format"
CLASS_NAMES_FILE = "class_names.txt"  # one per line, metadata class order; in the SavedModel's assets/
METRICS_FILE = "metrics.json"


def stored_size(height: tf.Tensor, width: tf.Tensor, size: int) -> tuple[tf.Tensor, tf.Tensor]:
    """(height, width) with the shorter side = size, aspect kept: images.storage_size's rounding, in graph."""
    h, w = tf.cast(height, tf.float64), tf.cast(width, tf.float64)
    scale = size / tf.minimum(h, w)
    # Python's round() (images.storage_size) rounds half to even, as tf.round does.
    return (
        tf.maximum(size, tf.cast(tf.round(h * scale), tf.int32)),
        tf.maximum(size, tf.cast(tf.round(w * scale), tf.int32)),
    )


def resize_and_crop(image: tf.Tensor, size: int) -> tf.Tensor:
    """Shorter side resized to S (bicubic, as data preparation stores images), then the center SxS square."""
    height, width = tf.shape(image)[0], tf.shape(image)[1]
    new_h, new_w = stored_size(height, width, size)
    image = tf.cond(
        tf.logical_and(tf.equal(new_h, height), tf.equal(new_w, width)),
        lambda: image,
        lambda: tf.cast(
            tf.clip_by_value(
                tf.round(tf.image.resize(image, [new_h, new_w], method="bicubic", antialias=True)), 0, 255
            ),
            tf.uint8,
        ),
    )
    top, left = (new_h - size) // 2, (new_w - size) // 2
    return image[top : top + size, left : left + size]


def decode_jpeg(encoded: tf.Tensor, size: int) -> tf.Tensor:
    """A JPEG at shorter side S (every stored image) is decoded exactly as data.decode_center decodes it:
    the cropping decode gives other pixels than decode-then-slice where the window is not block-aligned."""
    shape = tf.io.extract_jpeg_shape(encoded)
    height, width = shape[0], shape[1]
    window = tf.stack([(height - size) // 2, (width - size) // 2, size, size])
    return tf.cond(
        tf.equal(tf.minimum(height, width), size),
        lambda: tf.io.decode_and_crop_jpeg(encoded, window, channels=3),
        lambda: resize_and_crop(tf.io.decode_jpeg(encoded, channels=3), size),
    )


def decode_for_serving(encoded: tf.Tensor, size: int) -> tf.Tensor:
    """JPEG/PNG bytes -> the uint8 [S, S, 3] that validation sees (shorter side S, center SxS square)."""
    image = tf.cond(
        tf.io.is_jpeg(encoded),
        lambda: decode_jpeg(encoded, size),
        lambda: resize_and_crop(tf.io.decode_image(encoded, channels=3, expand_animations=False), size),
    )
    return tf.ensure_shape(image, [size, size, 3])


def decode_each(image_bytes: tf.Tensor, size: int) -> tuple[tf.Tensor, tf.Tensor]:
    """(indices [k] of the images that decode, their uint8 [k, S, S, 3]): each image is decoded on its own in
    a tf.data pipeline whose `ignore_errors` drops an element that fails (tf.data.Dataset.ignore_errors),
    so one bad image cannot fail the others sent with it."""
    count = tf.shape(image_bytes)[0]
    each = tf.data.Dataset.from_tensor_slices((tf.range(count), image_bytes))
    decoded = each.map(lambda i, encoded: (i, decode_for_serving(encoded, size))).ignore_errors()
    empty = (tf.zeros([0], tf.int32), tf.zeros([0, size, size, 3], tf.uint8))
    return decoded.batch(64).reduce(
        empty, lambda kept, batch: (tf.concat([kept[0], batch[0]], 0), tf.concat([kept[1], batch[1]], 0))
    )


def ranked_classes(probs: tf.Tensor, read: tf.Tensor, class_names: list[str]) -> dict[str, tf.Tensor]:
    """probs [n, 1 or N] (a sigmoid head's [n, 1] is P(second class)) and read [n] (decoded or not) -> the
    batch signature's outputs: classes most probable first (ties: class order), "" for an unread image."""
    full = tf.concat([1 - probs, probs], axis=1) if probs.shape[1] == 1 else probs
    order = tf.argsort(full, axis=1, direction="DESCENDING", stable=True)
    classes = tf.where(read[:, None], tf.gather(tf.constant(class_names), order), "")
    probabilities = tf.where(read[:, None], tf.gather(full, order, batch_dims=1), 0.0)
    return {
        TOP_CLASS: classes[:, 0],
        CLASSES: classes,
        PROBABILITIES: probabilities,
        ERROR: tf.where(read, "", UNREADABLE),
    }


def class_names_asset(class_names: list[str], folder: str) -> tf.saved_model.Asset:
    """The class names as a SavedModel asset: copied into the model's assets/: the model alone names them."""
    path = os.path.join(folder, CLASS_NAMES_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(f"{name}\n" for name in class_names))
    return tf.saved_model.Asset(path)


def export(model: keras.Model, model_dir: str, image_size: int, role: Role, class_names: list[str]) -> None:
    """serving_default: float32 RGB 0..255 [None, S, S, 3] -> {"probability": [None, 1] P(second class) for
    two classes, [None, N] class probabilities (metadata class order) for N > 2}; no augmentation.
    serving_bytes: the same from image_bytes, a [None] batch of encoded JPEG/PNG images of any size.
    <model_dir>/serving_bytes/: the same variables; its serving_default takes image_bytes and answers each
    image's class names and probabilities, or its error (batch prediction: one bad image fails alone)."""

    @tf.function(
        input_signature=[tf.TensorSpec([None, image_size, image_size, 3], tf.float32, SIGNATURE_INPUT)]
    )
    def serve(images: tf.Tensor) -> dict[str, tf.Tensor]:
        return {SIGNATURE_OUTPUT: tf.cast(model(images, training=False), tf.float32)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, BYTES_INPUT)])
    def serve_bytes(image_bytes: tf.Tensor) -> dict[str, tf.Tensor]:
        images = tf.map_fn(
            lambda encoded: decode_for_serving(encoded, image_size),
            image_bytes,
            fn_output_signature=tf.TensorSpec([image_size, image_size, 3], tf.uint8),
        )
        return serve(tf.cast(images, tf.float32))

    width = int(model.output_shape[-1])  # 1 (a sigmoid head) or the number of classes

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, BYTES_INPUT)])
    def serve_batch(image_bytes: tf.Tensor) -> dict[str, tf.Tensor]:
        count = tf.shape(image_bytes)[0]
        index, images = decode_each(image_bytes, image_size)
        # No image read: the model is not called (DenseNet's batch norm fails on an empty batch: "scale must
        # have the same number of elements as the channels of x", seen with TF 2.21).
        probs = tf.cond(
            tf.size(index) > 0,
            lambda: serve(tf.cast(images, tf.float32))[SIGNATURE_OUTPUT],
            lambda: tf.zeros([0, width], tf.float32),
        )
        placed = tf.ensure_shape(
            tf.scatter_nd(index[:, None], probs, tf.stack([count, width])), [None, width]
        )
        read = tf.scatter_nd(index[:, None], tf.ones_like(index, tf.bool), [count])
        return ranked_classes(placed, read, class_names)

    # A plain tf.Module holding the variables and the signature: Keras' own SavedModel format would trace
    # every layer's call for reloading as Keras, which costs minutes for DenseNet and serving never uses.
    module = tf.Module()
    module.model_variables = model.variables
    module.serve = serve
    module.serve_bytes = serve_bytes
    for_files = tf.Module()
    for_files.model_variables = model.variables
    for_files.serve_bytes = serve_bytes
    for_files.serve_batch = serve_batch
    with tempfile.TemporaryDirectory() as tmp, write_dir(model_dir, role) as path:
        module.class_names = for_files.class_names = class_names_asset(class_names, tmp)
        tf.saved_model.save(module, path, signatures={"serving_default": serve, BYTES_SIGNATURE: serve_bytes})
        by_files = {"serving_default": serve_batch, BYTES_SIGNATURE: serve_bytes}
        tf.saved_model.save(for_files, posixpath.join(path, BYTES_MODEL_DIR), signatures=by_files)


def predict_saved_model(model_dir: str, dataset: tf.data.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities [n, 1 or N], labels [n]) of the exported model over (uint8 images, labels) batches."""
    serve = tf.saved_model.load(model_dir).signatures["serving_default"]
    probs, labels = [], []
    for images, y in dataset:
        probs.append(serve(**{SIGNATURE_INPUT: tf.cast(images, tf.float32)})[SIGNATURE_OUTPUT].numpy())
        labels.append(y.numpy())
    return np.concatenate(probs), np.concatenate(labels)


def class_probabilities(probs: np.ndarray) -> np.ndarray:
    """[n, N] probabilities of every class; a sigmoid head's [n, 1] becomes [1 - p, p]."""
    return np.concatenate([1 - probs, probs], axis=1) if probs.shape[1] == 1 else probs


def classification_metrics(probs: np.ndarray, labels: np.ndarray, class_names: list[str]) -> dict:
    """Accuracy, cross-entropy (clipped like Keras), per-class accuracy and confusion matrix (rows: true
    class, columns: predicted, metadata class order). For two classes: accuracy at 0.5 and binary CE."""
    p = class_probabilities(probs.astype(np.float64))
    truth = labels.astype(np.int64)
    predicted = np.argmax(p, axis=1)
    loss = -np.mean(np.log(np.clip(p[np.arange(len(truth)), truth], 1e-7, 1 - 1e-7)))
    confusion = np.zeros((len(class_names), len(class_names)), np.int64)
    np.add.at(confusion, (truth, predicted), 1)
    seen = confusion.sum(axis=1)
    return {
        "val_accuracy": float(np.mean(predicted == truth)),
        "val_loss": float(loss),
        # None for a class without validation images (no accuracy to report, and NaN is not JSON).
        "per_class_accuracy": {
            name: float(confusion[i, i] / seen[i]) if seen[i] else None for i, name in enumerate(class_names)
        },
        "confusion_matrix": confusion.tolist(),
    }


def json_safe(value: object) -> object:
    """`value` with NaN and infinities (a diverged loss) as None: not JSON, and strict readers refuse them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def discard_metrics(model_dir: str, role: Role) -> None:
    """Removes an earlier run's metrics.json (chief only): it must not outlive the model it described."""
    path = posixpath.join(model_dir, METRICS_FILE)
    if role.is_chief and tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)


def write_metrics(model_dir: str, metrics: dict) -> None:
    text = json.dumps(json_safe(metrics), indent=2, sort_keys=True, allow_nan=False)
    with tf.io.gfile.GFile(posixpath.join(model_dir, METRICS_FILE), "w") as f:
        f.write(text + "\n")
