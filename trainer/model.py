"""DenseNet121 transfer learning: preprocessing inside the model, frozen backbone, binary head."""

from __future__ import annotations

import tf_keras as keras

BACKBONE_NAME = "densenet121"
# Fine-tuning unfreezes the last dense block (conv5_*); earlier blocks and every BatchNorm stay frozen.
FINE_TUNE_PREFIX = "conv5_"
# DenseNet's ImageNet preprocessing ("torch" mode): scale to 0..1, then per-channel mean and std.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def build(image_size: int, weights: str | None, dropout: float = 0.2) -> keras.Model:
    """Takes float32 RGB 0..255 [None, S, S, 3]; returns the probability of the second class [None, 1].

    With pretrained weights the backbone starts frozen (head training). Without, there is nothing to
    protect: the whole backbone trains from scratch, BatchNorm included, until fine-tuning narrows it.
    """
    inputs = keras.Input((image_size, image_size, 3), name="images")
    # Preprocessing stays float32 under mixed precision and travels inside the exported model.
    x = keras.layers.Rescaling(1 / 255.0, dtype="float32", name="scale")(inputs)
    x = keras.layers.Normalization(
        mean=IMAGENET_MEAN, variance=[s**2 for s in IMAGENET_STD], dtype="float32", name="imagenet_norm"
    )(x)
    backbone = keras.applications.DenseNet121(
        include_top=False, weights=weights, input_shape=(image_size, image_size, 3), pooling="avg"
    )
    if weights is None:
        x = backbone(x)
    else:
        backbone.trainable = False
        # training=False keeps BatchNorm in inference mode even when layers inside are unfrozen later.
        x = backbone(x, training=False)
    x = keras.layers.Dropout(dropout, name="dropout")(x)
    outputs = keras.layers.Dense(1, activation="sigmoid", dtype="float32", name="probability")(x)
    return keras.Model(inputs, outputs, name="densenet121_binary")


def backbone_of(model: keras.Model) -> keras.Model:
    return model.get_layer(BACKBONE_NAME)


def unfreeze_top(model: keras.Model, prefix: str = FINE_TUNE_PREFIX) -> int:
    """Makes the backbone's layers named `prefix*` trainable, BatchNorm excepted; returns how many.

    The backbone is one nested layer: setting trainable on it alone would unfreeze all of it (the
    reference's bug), so the flag is set per inner layer after the container is made trainable.
    """
    backbone = backbone_of(model)
    backbone.trainable = True
    count = 0
    for layer in backbone.layers:
        tune = layer.name.startswith(prefix) and not isinstance(layer, keras.layers.BatchNormalization)
        layer.trainable = tune
        count += tune
    return count


def compile_for(model: keras.Model, learning_rate: float) -> None:
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.BinaryCrossentropy(),
        metrics=[keras.metrics.BinaryAccuracy(name="accuracy")],
    )
