"""SavedModel export with a serving signature, and metrics.json computed from the exported model itself."""

from __future__ import annotations

import json
import math
import posixpath

import numpy as np
import tensorflow as tf
import tf_keras as keras

from trainer.distribute import Role
from trainer.outputs import write_dir

SIGNATURE_INPUT = "images"
SIGNATURE_OUTPUT = "probability"
METRICS_FILE = "metrics.json"


def export(model: keras.Model, model_dir: str, image_size: int, role: Role) -> None:
    """serving_default: float32 RGB 0..255 [None, S, S, 3] -> {"probability": [None, 1] P(second class) for
    two classes, [None, N] class probabilities (metadata class order) for N > 2}; no augmentation."""

    @tf.function(
        input_signature=[tf.TensorSpec([None, image_size, image_size, 3], tf.float32, SIGNATURE_INPUT)]
    )
    def serve(images: tf.Tensor) -> dict[str, tf.Tensor]:
        return {SIGNATURE_OUTPUT: tf.cast(model(images, training=False), tf.float32)}

    # A plain tf.Module holding the variables and the signature: Keras' own SavedModel format would trace
    # every layer's call for reloading as Keras, which costs minutes for DenseNet and serving never uses.
    module = tf.Module()
    module.model_variables = model.variables
    module.serve = serve
    with write_dir(model_dir, role) as path:
        tf.saved_model.save(module, path, signatures={"serving_default": serve})


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


def write_metrics(model_dir: str, metrics: dict) -> None:
    text = json.dumps(json_safe(metrics), indent=2, sort_keys=True, allow_nan=False)
    with tf.io.gfile.GFile(posixpath.join(model_dir, METRICS_FILE), "w") as f:
        f.write(text + "\n")
