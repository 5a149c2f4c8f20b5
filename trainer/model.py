"""Transfer learning: augmentation and preprocessing inside the model, frozen backbone, class head.

The input pipeline ships uint8 batches; the model's float32 input casts them on the accelerator, and the
random flip runs there too (training only). Serving calls it with training=False: no flip, same preprocessing.
"""

from __future__ import annotations

import tf_keras as keras

from trainer import backbones


def build(
    image_size: int,
    weights: str | None,
    num_classes: int = 2,
    backbone: str = backbones.DEFAULT,
    dropout: float = 0.2,
) -> keras.Model:
    """Takes RGB 0..255 [None, S, S, 3] (uint8 or float32); returns P(second class) [None, 1] for two
    classes, else the class probabilities [None, N].

    With pretrained weights the backbone starts frozen (head training). Without, there is nothing to
    protect: the whole backbone trains from scratch, BatchNorm included, until fine-tuning narrows it.
    """
    spec = backbones.get(backbone)
    inputs = keras.Input((image_size, image_size, 3), name="images")  # float32: uint8 batches cast here
    # Augmentation and preprocessing stay float32 under mixed precision and travel inside the SavedModel.
    x = keras.layers.RandomFlip("horizontal", dtype="float32", name="flip")(inputs)
    x = backbones.preprocess(x, spec.preprocessing)
    net = backbones.create(spec, image_size, weights)
    if weights is None:
        x = net(x)
    else:
        net.trainable = False
        # training=False keeps BatchNorm in inference mode even when layers inside are unfrozen later.
        x = net(x, training=False)
    x = keras.layers.Dropout(dropout, name="dropout")(x)
    units, activation = (1, "sigmoid") if num_classes == 2 else (num_classes, "softmax")
    outputs = keras.layers.Dense(units, activation=activation, dtype="float32", name="probability")(x)
    return keras.Model(inputs, outputs, name=f"{spec.name}_{num_classes}_classes")


def backbone_of(model: keras.Model) -> keras.Model:
    """The nested backbone: the model's only layer that is itself a model."""
    (nested,) = [layer for layer in model.layers if isinstance(layer, keras.Model)]
    return nested


def unfreeze_top(model: keras.Model, top_block: tuple[str, ...]) -> int:
    """Makes the backbone's layers named `top_block*` trainable, BatchNorm excepted; returns how many.

    The backbone is one nested layer: setting trainable on it alone would unfreeze all of it (the
    reference's bug), so the flag is set per inner layer after the container is made trainable.
    """
    backbone = backbone_of(model)
    backbone.trainable = True
    count = 0
    for layer in backbone.layers:
        tune = layer.name.startswith(top_block) and not isinstance(layer, keras.layers.BatchNormalization)
        layer.trainable = tune
        count += tune
    return count


def compile_for(model: keras.Model, learning_rate: float, num_classes: int = 2) -> None:
    if num_classes == 2:
        loss, accuracy = keras.losses.BinaryCrossentropy(), keras.metrics.BinaryAccuracy(name="accuracy")
    else:
        loss = keras.losses.SparseCategoricalCrossentropy()
        accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss=loss, metrics=[accuracy])
