"""What a model directory must hold for the server: the trainer's SavedModel contract, as the server reads it
(docs/trainer-contract.md). Plain names only: the stack checks a directory against them before any job or
model version uses it, without TensorFlow."""

from __future__ import annotations

SAVED_MODEL_FILE = "saved_model.pb"
# One class name per line, in the order of the model's probabilities (trainer/export.py CLASS_NAMES_FILE).
CLASS_NAMES_FILE = "assets/class_names.txt"
REQUIRED_FILES = (SAVED_MODEL_FILE, CLASS_NAMES_FILE)
# The signature the server calls: a [None] batch of encoded JPEG/PNG images in, [None, 1] P(second class) or
# [None, N] class probabilities out (trainer/export.py BYTES_SIGNATURE, BYTES_INPUT, SIGNATURE_OUTPUT).
BYTES_SIGNATURE = "serving_bytes"
BYTES_INPUT = "image_bytes"
PROBABILITIES_OUTPUT = "probability"


class ModelError(RuntimeError):
    """A model directory the server cannot serve; the message names what is missing."""


def missing_files_message(model_uri: str, missing: list[str]) -> str:
    """Why a directory cannot be served, and what to pass instead."""
    return (
        f"{model_uri} holds no model the prediction server can serve: {', '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} missing. Pass the directory a training job exported its "
        "model to (its model_dir output, the trainer's --model-dir or AIP_MODEL_DIR), not a folder inside it."
    )
