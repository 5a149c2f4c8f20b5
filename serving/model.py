"""The served model: loaded once from the trainer's model directory, called once per request on all its
images; an image that does not decode is answered alone with an error, the others are classified."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from serving import model_files
from serving.model_files import ModelError
from serving.payload import UNREADABLE, Answer, unreadable

# What the model's in-graph decode raises for bytes that are not a readable image (tf.io.decode_image /
# decode_and_crop_jpeg: "Unknown image file format", "Invalid JPEG data or crop window", a truncated PNG).
DECODE_ERRORS = (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError, tf.errors.DataLossError)

Signature = Callable[..., Mapping[str, tf.Tensor]]


class ServedModel:
    """The model's bytes signature and class names; `answer` classifies a request's images."""

    def __init__(self, signature: Signature, class_names: list[str]) -> None:
        self._signature = signature
        self.class_names = class_names

    def answer(self, images: Sequence[bytes]) -> list[Answer]:
        """One answer per image, in order."""
        if not images:
            return []
        return [unreadable(UNREADABLE) if p is None else self._ranked(p) for p in self._probabilities(images)]

    def _probabilities(self, images: Sequence[bytes]) -> list[np.ndarray | None]:
        """Each image's class probabilities, None where it does not decode. The whole batch goes through
        the model in one call. A batch the model's decode refuses is called again without the images that
        do not decode on their own; should it still fail (an image the model's own crop refuses), it is
        split in halves until each unreadable image stands alone."""
        try:
            result = self._signature(**{model_files.BYTES_INPUT: tf.constant(list(images))})
        except DECODE_ERRORS:
            if len(images) == 1:
                return [None]
            readable = [i for i, image in enumerate(images) if _decodes(image)]
            if len(readable) < len(images):
                found = self._probabilities([images[i] for i in readable]) if readable else []
                answers: list[np.ndarray | None] = [None] * len(images)
                for i, probs in zip(readable, found, strict=True):
                    answers[i] = probs
                return answers
            half = len(images) // 2
            return self._probabilities(images[:half]) + self._probabilities(images[half:])
        probs = result[model_files.PROBABILITIES_OUTPUT].numpy().astype(np.float64)
        full = np.concatenate([1 - probs, probs], axis=1) if probs.shape[1] == 1 else probs
        return list(full)

    def _ranked(self, probs: np.ndarray) -> Answer:
        # Most probable first; ties keep class order (as trainer.predict ranks them).
        order = np.argsort(-probs, kind="stable")
        classes = [self.class_names[i] for i in order]
        return Answer(classes[0], classes, [float(probs[i]) for i in order], "")


def _decodes(image: bytes) -> bool:
    """Whether the bytes decode as an image on their own (a cheap look next to a model call)."""
    try:
        tf.io.decode_image(image, channels=3, expand_animations=False)
    except DECODE_ERRORS:
        return False
    return True


def _read_text(path: str) -> str:
    with tf.io.gfile.GFile(path) as f:
        return str(f.read())


def load(model_uri: str) -> ServedModel:
    """The model at `model_uri` (gs:// or local), checked, loaded and called once so the first request does
    not pay for the graph's first run."""
    missing = [f for f in model_files.REQUIRED_FILES if not tf.io.gfile.exists(posixpath.join(model_uri, f))]
    if missing:
        raise ModelError(model_files.missing_files_message(model_uri, missing))
    class_names = _read_text(posixpath.join(model_uri, model_files.CLASS_NAMES_FILE)).splitlines()
    signatures = tf.saved_model.load(model_uri).signatures
    if model_files.BYTES_SIGNATURE not in signatures:
        raise ModelError(
            f"{model_uri}: the SavedModel has no {model_files.BYTES_SIGNATURE} signature (it has "
            f"{sorted(signatures)}); export it again with this project's trainer."
        )
    served = ServedModel(signatures[model_files.BYTES_SIGNATURE], class_names)
    width = len(served.answer([_warm_up_image()])[0].classes)
    if width != len(class_names):
        raise ModelError(
            f"{model_uri}: the model returns {width} class probabilities but "
            f"{model_files.CLASS_NAMES_FILE} names {len(class_names)} classes"
        )
    return served


def _warm_up_image() -> bytes:
    return bytes(tf.io.encode_png(tf.zeros([8, 8, 3], tf.uint8)).numpy())
