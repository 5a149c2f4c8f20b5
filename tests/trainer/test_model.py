"""Each backbone: its own preprocessing inside the model, fine-tuning only its top block (BatchNorm frozen),
augmentation only in training, and an exported SavedModel that serves what the Keras model computes."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from tests.trainer.helpers import SIZE
from trainer import backbones, distribute, export, model


@pytest.mark.parametrize("name", list(backbones.BACKBONES))
def test_backbone_fine_tunes_only_its_top_block_and_exports(name: str, tmp_path) -> None:
    spec = backbones.get(name)
    net = model.build(SIZE, None, num_classes=3, backbone=name)
    backbone = model.backbone_of(net)
    backbone.trainable = False  # the state head training starts from with pretrained weights
    assert len(net.trainable_weights) == 2  # the Dense head's kernel and bias

    tuned = model.unfreeze_top(net, spec.top_block)
    trainable = [layer for layer in backbone.layers if layer.trainable]
    assert tuned == len(trainable) > 0
    assert all(layer.name.startswith(spec.top_block) for layer in trainable)
    assert not any(isinstance(layer, keras.layers.BatchNormalization) for layer in trainable)
    frozen_with_weights = [layer for layer in backbone.layers if layer.weights and not layer.trainable]
    assert any(not layer.name.startswith(spec.top_block) for layer in frozen_with_weights)
    assert 2 < len(net.trainable_weights) < len(backbone.weights) // 2

    # Exported: float32 0..255 in, class probabilities [None, 3] out, equal to the Keras model's.
    export.export(net, str(tmp_path / "model"), SIZE, distribute.role(None), ["a", "b", "c"])
    serve = tf.saved_model.load(str(tmp_path / "model")).signatures["serving_default"]
    images = np.random.default_rng(0).uniform(0, 255, (2, SIZE, SIZE, 3)).astype(np.float32)
    served = serve(images=tf.constant(images))[export.SIGNATURE_OUTPUT].numpy()
    assert served.shape == (2, 3)
    np.testing.assert_allclose(served.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(served, net(images, training=False).numpy(), rtol=1e-4, atol=1e-6)


def test_each_backbone_gets_its_own_imagenet_preprocessing() -> None:
    """keras.applications' own preprocess_input for each family is what the in-model layers compute."""
    pixels = np.random.default_rng(1).uniform(0, 255, (1, SIZE, SIZE, 3)).astype(np.float32)
    expected = {
        "densenet121": keras.applications.densenet.preprocess_input(pixels.copy()),  # "torch" mode
        "resnet50": keras.applications.resnet50.preprocess_input(pixels.copy()),  # "caffe": BGR, mean
    }
    for name, want in expected.items():
        inputs = keras.Input((SIZE, SIZE, 3))
        pre = keras.Model(inputs, backbones.preprocess(inputs, backbones.get(name).preprocessing))
        np.testing.assert_allclose(pre(pixels).numpy(), want, rtol=1e-5, atol=1e-3)
    assert backbones.get("efficientnetv2b0").preprocessing == "torch"  # efficientnet_v2.py, B variants


def test_flip_happens_in_training_only_and_uint8_is_cast_inside() -> None:
    net = model.build(SIZE, None)
    images = np.zeros((1, SIZE, SIZE, 3), np.uint8)
    images[:, :, : SIZE // 2] = 255  # left half white: a flip changes it
    flip = keras.Model(net.input, net.get_layer("flip").output)
    assert flip(images, training=False).dtype == tf.float32
    np.testing.assert_array_equal(flip(images, training=False).numpy(), images.astype(np.float32))
    seen = {flip(images, training=True).numpy()[0, 0, 0, 0] for _ in range(20)}
    assert seen == {0.0, 255.0}  # flipped on some calls, not on others


def test_two_classes_keep_one_sigmoid_probability() -> None:
    net = model.build(SIZE, None)
    out = net(np.full((2, SIZE, SIZE, 3), 255.0, np.float32), training=False).numpy()
    assert out.shape == (2, 1) and ((out >= 0) & (out <= 1)).all()
    assert [layer.name for layer in net.layers[:4]] == ["images", "flip", "scale", "imagenet_norm"]
    assert net.get_layer("probability").activation is keras.activations.sigmoid


def test_unknown_backbone_is_a_clear_error() -> None:
    from trainer.errors import TrainerError

    with pytest.raises(TrainerError, match="unknown backbone 'vgg16'; pick one of densenet121, resnet50"):
        backbones.get("vgg16")


def test_mixed_precision_computes_in_float16_with_a_float32_head_and_loss_scaling() -> None:
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        net = model.build(SIZE, None, num_classes=4, backbone="resnet50")
        model.compile_for(net, 1e-3, num_classes=4)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert model.backbone_of(net).compute_dtype == "float16"
    for layer in ("flip", "imagenet_norm", "to_bgr", "probability"):
        assert net.get_layer(layer).compute_dtype == "float32"
    assert isinstance(net.optimizer, keras.mixed_precision.LossScaleOptimizer)
    out = net(np.full((2, SIZE, SIZE, 3), 128.0, np.float32), training=False)
    assert out.dtype == "float32" and out.shape == (2, 4)
