"""SavedModel export with a serving signature, and metrics.json computed from the exported model itself."""

from __future__ import annotations

import json
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
    """serving_default: float32 RGB 0..255 [None, S, S, 3] -> {"probability": P(second class), [None]}."""

    @tf.function(
        input_signature=[tf.TensorSpec([None, image_size, image_size, 3], tf.float32, SIGNATURE_INPUT)]
    )
    def serve(images: tf.Tensor) -> dict[str, tf.Tensor]:
        return {SIGNATURE_OUTPUT: tf.cast(model(images, training=False)[:, 0], tf.float32)}

    # A plain tf.Module holding the variables and the signature: Keras' own SavedModel format would trace
    # every layer's call for reloading as Keras, which costs minutes for DenseNet and serving never uses.
    module = tf.Module()
    module.model_variables = model.variables
    module.serve = serve
    with write_dir(model_dir, role) as path:
        tf.saved_model.save(module, path, signatures={"serving_default": serve})


def predict_saved_model(model_dir: str, dataset: tf.data.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities, labels) of the exported model over a dataset of (images, labels) batches."""
    serve = tf.saved_model.load(model_dir).signatures["serving_default"]
    probs, labels = [], []
    for images, y in dataset:
        probs.append(serve(**{SIGNATURE_INPUT: images})[SIGNATURE_OUTPUT].numpy())
        labels.append(y.numpy())
    return np.concatenate(probs), np.concatenate(labels)


def binary_metrics(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Accuracy at 0.5 and binary cross-entropy (clipped like Keras) of predicted probabilities."""
    p = np.clip(probs.astype(np.float64), 1e-7, 1 - 1e-7)
    loss = -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    return {"val_accuracy": float(np.mean((probs > 0.5) == (labels > 0.5))), "val_loss": float(loss)}


def write_metrics(model_dir: str, metrics: dict) -> None:
    with tf.io.gfile.GFile(posixpath.join(model_dir, METRICS_FILE), "w") as f:
        f.write(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
