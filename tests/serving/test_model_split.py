"""How ServedModel finds the images a batch call refuses, on a stand-in for the model's signature that
refuses as the real one does (tf.errors.InvalidArgumentError for the whole call): one call for a good batch;
the unreadable images set aside by decoding each once; halving for an image that decodes on its own but
that the model's own crop refuses."""

from __future__ import annotations

import io

import numpy as np
import tensorflow as tf
from PIL import Image

from serving.model import ServedModel
from serving.payload import UNREADABLE


def png(value: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (value, value, value)).save(out, format="PNG")
    return out.getvalue()


class Signature:
    """P(second class) = the image's first byte after the PNG header, as a stand-in model; refuses a call
    holding a string that does not decode, or one of `refused` (valid images its crop would refuse)."""

    def __init__(self, refused: tuple[bytes, ...] = ()) -> None:
        self.refused = refused
        self.calls: list[int] = []

    def __call__(self, image_bytes: tf.Tensor) -> dict[str, tf.Tensor]:
        images = [bytes(b) for b in image_bytes.numpy()]
        self.calls.append(len(images))
        for image in images:
            tf.io.decode_image(image, channels=3)  # raises for a non-image, as the model's decode does
            if image in self.refused:
                raise tf.errors.InvalidArgumentError(None, None, "Invalid JPEG data or crop window")
        probs = [[float(tf.io.decode_image(i, channels=3).numpy()[0, 0, 0]) / 255] for i in images]
        return {"probability": tf.constant(probs, tf.float32)}


def test_a_good_batch_is_one_call() -> None:
    signature = Signature()
    answers = ServedModel(signature, ["cats", "dogs"]).answer([png(51), png(204)])
    assert signature.calls == [2]
    assert [a.top_class for a in answers] == ["cats", "dogs"]
    np.testing.assert_allclose(answers[1].probabilities, [0.8, 0.2], atol=1e-6)


def test_unreadable_images_are_set_aside_after_one_refused_call() -> None:
    signature = Signature()
    sent = [png(204), b"junk", png(51), b"\x89PNG broken", png(230)]
    answers = ServedModel(signature, ["cats", "dogs"]).answer(sent)
    assert signature.calls == [5, 3]  # the refused call, then the three readable images at once
    assert [a.error for a in answers] == ["", UNREADABLE, "", UNREADABLE, ""]
    assert [a.top_class for a in answers] == ["dogs", "", "cats", "", "dogs"]


def test_an_image_only_the_model_refuses_is_found_by_halving() -> None:
    bad = png(128)
    signature = Signature(refused=(bad,))
    sent = [png(10), png(20), bad, png(30)]
    answers = ServedModel(signature, ["cats", "dogs"]).answer(sent)
    assert [a.error == UNREADABLE for a in answers] == [False, False, True, False]
    assert signature.calls == [4, 2, 2, 1, 1]  # refused; halves [10, 20] ok, [bad, 30] refused; then each
