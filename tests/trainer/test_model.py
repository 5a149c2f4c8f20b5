"""Fine-tuning unfreezes only the top block inside the nested backbone, BatchNorm kept frozen."""

from __future__ import annotations

import tf_keras as keras

from tests.trainer.helpers import SIZE
from trainer import model


def test_fine_tuning_unfreezes_the_top_block_not_the_whole_backbone() -> None:
    net = model.build(SIZE, None)
    backbone = model.backbone_of(net)
    backbone.trainable = False  # the state head training starts from with pretrained weights
    head_only = len(net.trainable_weights)
    assert head_only == 2  # the Dense head's kernel and bias

    tuned = model.unfreeze_top(net)
    inner = backbone.layers
    trainable = [layer for layer in inner if layer.trainable]
    assert tuned == len(trainable) > 0
    assert all(layer.name.startswith("conv5_") for layer in trainable)
    assert not any(isinstance(layer, keras.layers.BatchNormalization) for layer in trainable)
    assert not any(
        layer.trainable for layer in inner if layer.name.startswith(("conv2_", "conv3_", "conv4_"))
    )
    assert head_only < len(net.trainable_weights) < len(backbone.weights) // 2


def test_model_takes_raw_pixels_and_returns_one_probability() -> None:
    import numpy as np

    net = model.build(SIZE, None)
    out = net(np.full((2, SIZE, SIZE, 3), 255.0, np.float32), training=False).numpy()
    assert out.shape == (2, 1) and ((out >= 0) & (out <= 1)).all()
    assert [layer.name for layer in net.layers[:3]] == ["images", "scale", "imagenet_norm"]


def test_mixed_precision_computes_in_float16_with_a_float32_head_and_loss_scaling() -> None:
    import numpy as np

    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        net = model.build(SIZE, None)
        model.compile_for(net, 1e-3)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert model.backbone_of(net).compute_dtype == "float16"
    assert net.get_layer("scale").compute_dtype == "float32"
    assert net.get_layer("probability").compute_dtype == "float32"
    assert isinstance(net.optimizer, keras.mixed_precision.LossScaleOptimizer)
    out = net(np.full((2, SIZE, SIZE, 3), 128.0, np.float32), training=False)
    assert out.dtype == "float32"
