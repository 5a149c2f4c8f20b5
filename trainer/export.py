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
# The prediction server (serving/model_files.py) calls this signature with each request's images, sent
# as {"image_bytes": {"b64": ...}}: the name Google's prediction examples give an encoded image.
BYTES_SIGNATURE = "serving_bytes"
BYTES_INPUT = "image_bytes"
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


def class_names_asset(class_names: list[str], folder: str) -> tf.saved_model.Asset:
    """The class names as a SavedModel asset: copied into the model's assets/: the model alone names them."""
    path = os.path.join(folder, CLASS_NAMES_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(f"{name}\n" for name in class_names))
    return tf.saved_model.Asset(path)


def export(model: keras.Model, model_dir: str, image_size: int, role: Role, class_names: list[str]) -> None:
    """serving_default: float32 RGB 0..255 [None, S, S, 3] -> {"probability": [None, 1] P(second class) for
    two classes, [None, N] class probabilities (metadata class order) for N > 2}; no augmentation.
    serving_bytes: the same from image_bytes, a [None] batch of encoded JPEG/PNG images of any size: what
    the prediction server (serving/) calls, on every request's images at once."""

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

    # A plain tf.Module holding the variables and the signature: Keras' own SavedModel format would trace
    # every layer's call for reloading as Keras, which costs minutes for DenseNet and serving never uses.
    module = tf.Module()
    module.model_variables = model.variables
    module.serve = serve
    module.serve_bytes = serve_bytes
    with tempfile.TemporaryDirectory() as tmp, write_dir(model_dir, role) as path:
        module.class_names = class_names_asset(class_names, tmp)
        tf.saved_model.save(module, path, signatures={"serving_default": serve, BYTES_SIGNATURE: serve_bytes})


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
