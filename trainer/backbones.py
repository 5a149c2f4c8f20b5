"""The backbones the trainer fine-tunes: each one's constructor, ImageNet preprocessing and top block.

Preprocessing is what each family's ImageNet weights were trained with (keras.applications' own
`preprocess_input`): "torch" = scale to 0..1, then per-channel mean/std; "caffe" = RGB -> BGR, then subtract
the per-channel mean, no scaling. It is built from float32 layers inside the model, so the SavedModel takes
raw pixels and mixed precision never touches it.
"""

from __future__ import annotations

import os
import posixpath
import re
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import tensorflow as tf
import tf_keras as keras

from trainer.errors import TrainerError

Preprocessing = Literal["torch", "caffe"]
TORCH_MEAN = (0.485, 0.456, 0.406)
TORCH_STD = (0.229, 0.224, 0.225)
CAFFE_MEAN_RGB = (123.68, 116.779, 103.939)  # keras' caffe mode subtracts these after the BGR flip


@dataclass(frozen=True)
class Backbone:
    name: str
    constructor: Callable[..., keras.Model]
    preprocessing: Preprocessing
    # Fine-tuning unfreezes the layers whose names start with one of these: the network's last block.
    top_block: tuple[str, ...]
    options: dict = field(default_factory=dict)


BACKBONES: dict[str, Backbone] = {
    backbone.name: backbone
    for backbone in (
        # Last dense block (conv5_*): 80 of DenseNet121's layers.
        Backbone("densenet121", keras.applications.DenseNet121, "torch", ("conv5_",)),
        # Last stage (conv5_block1..3): the 2048-channel bottleneck blocks.
        Backbone("resnet50", keras.applications.ResNet50, "caffe", ("conv5_",)),
        # Last MBConv stage (block6a..h) and the 1x1 top convolution. Its built-in rescaling is turned off:
        # the same "torch" preprocessing is done here in float32 (keras' efficientnet_v2.py, B variants).
        Backbone(
            "efficientnetv2b0",
            keras.applications.EfficientNetV2B0,
            "torch",
            ("block6", "top_"),
            {"include_preprocessing": False},
        ),
    )
}
DEFAULT = "densenet121"
# How keras.applications (tf_keras `utils/data_utils.py` get_file) words a download that failed.
URL_FETCH_FAILURE = "URL fetch failure on"


def get(name: str) -> Backbone:
    if name not in BACKBONES:
        raise TrainerError(f"unknown backbone {name!r}; pick one of {', '.join(BACKBONES)}")
    return BACKBONES[name]


class ReverseChannels(keras.layers.Layer):
    """RGB -> BGR: the channel order caffe-mode ImageNet weights expect."""

    def call(self, inputs: tf.Tensor) -> tf.Tensor:
        return inputs[..., ::-1]


def preprocess(x: tf.Tensor, kind: Preprocessing) -> tf.Tensor:
    """Float32 0..255 RGB -> what the backbone's ImageNet weights were trained on."""
    if kind == "torch":
        x = keras.layers.Rescaling(1 / 255.0, dtype="float32", name="scale")(x)
        return keras.layers.Normalization(
            mean=TORCH_MEAN, variance=[s**2 for s in TORCH_STD], dtype="float32", name="imagenet_norm"
        )(x)
    x = keras.layers.Normalization(
        mean=CAFFE_MEAN_RGB, variance=(1.0, 1.0, 1.0), dtype="float32", name="imagenet_norm"
    )(x)
    return ReverseChannels(dtype="float32", name="to_bgr")(x)


def create(backbone: Backbone, image_size: int, weights: str | None) -> keras.Model:
    try:
        return backbone.constructor(
            include_top=False,
            weights=weights,
            input_shape=(image_size, image_size, 3),
            pooling="avg",
            **backbone.options,
        )
    except Exception as exc:
        if weights is None or not is_download_failure(exc):
            raise
        raise TrainerError(weights_unreachable(backbone.name, str(exc))) from None


def is_download_failure(exc: BaseException) -> bool:
    """keras' get_file turns a failed download into a bare Exception("URL fetch failure on URL: ...");
    other network errors (a timeout mid-transfer) pass through as they are."""
    return str(exc).startswith(URL_FETCH_FAILURE) or isinstance(
        exc, urllib.error.URLError | ConnectionError | TimeoutError
    )


def weights_cache() -> str:
    """Where keras.applications looks for (and saves) weights files: ~/.keras/models, or /tmp/.keras/models
    when ~/.keras is not writable (tf_keras 2.21 `utils/data_utils.py` get_file; it reads no KERAS_HOME)."""
    base = os.path.expanduser(os.path.join("~", ".keras"))
    if not os.access(base, os.W_OK):
        base = os.path.join("/tmp", ".keras")
    return os.path.join(base, "models")


def weights_unreachable(backbone: str, failure: str) -> str:
    """The one message for ImageNet weights that cannot be fetched: train without them, or cache the file."""
    url = re.search(r"https?://\S+?\.h5", failure)
    reason = failure.rsplit(" -- ", 1)[-1].strip()  # get_file's "URL fetch failure on URL: errno -- reason"
    where = weights_cache()
    fetch = (
        f"save {url.group(0)} as {os.path.join(where, posixpath.basename(url.group(0)))}"
        if url
        else f"put its weights file into {where}"
    )
    return (
        f"cannot download the ImageNet weights of {backbone} ({reason}). Train without them with "
        f"--weights none (random start: needs more images and epochs), or {fetch} (Keras' weights cache) "
        "on a machine with network access and run again"
    )
