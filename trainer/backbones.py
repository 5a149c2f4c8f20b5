"""The backbones the trainer fine-tunes: each one's constructor, ImageNet preprocessing and top block.

Preprocessing is what each family's ImageNet weights were trained with (keras.applications' own
`preprocess_input`): "torch" = scale to 0..1, then per-channel mean/std; "caffe" = RGB -> BGR, then subtract
the per-channel mean, no scaling. It is built from float32 layers inside the model, so the SavedModel takes
raw pixels and mixed precision never touches it.
"""

from __future__ import annotations

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
    return backbone.constructor(
        include_top=False,
        weights=weights,
        input_shape=(image_size, image_size, 3),
        pooling="avg",
        **backbone.options,
    )
