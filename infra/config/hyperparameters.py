"""Hyperparameter keys: the training arguments (a change replaces only the training job)."""

from __future__ import annotations

from dataclasses import dataclass

from infra.config.reader import ConfigError, Reader, positive, set_fix

WEIGHTS = ("imagenet", "none")
MIXED_PRECISION = ("auto", "on", "off")
# The trainer's --backbone choices (trainer/backbones.py; the two packages never import each other).
BACKBONES = ("densenet121", "resnet50", "efficientnetv2b0")
KEYS = (
    "epochs",
    "fineTuneEpochs",
    "batchSize",
    "learningRate",
    "weights",
    "mixedPrecision",
    "backbone",
    "numClasses",
)


@dataclass(frozen=True)
class Hyperparameters:
    """Training arguments; a change here replaces only the training job."""

    epochs: int
    fine_tune_epochs: int
    batch_size: int
    learning_rate: float
    weights: str
    mixed_precision: str
    backbone: str = BACKBONES[0]
    num_classes: int | None = None  # checked against the data's class count before training starts


def read_hyperparameters(read: Reader) -> Hyperparameters:
    epochs = read.number("epochs", 5, int, "5")
    positive("epochs", epochs, "5")
    fine_tune = read.number("fineTuneEpochs", 2, int, "2")
    if fine_tune < 0:
        raise ConfigError(
            "fineTuneEpochs", f"must be 0 or more, got {fine_tune}", set_fix("fineTuneEpochs", "2")
        )
    batch_size = read.number("batchSize", 32, int, "32")
    positive("batchSize", batch_size, "32", maximum=4096)
    learning_rate = read.number("learningRate", 1e-3, float, "0.001")
    positive("learningRate", learning_rate, "0.001", maximum=1.0)
    return Hyperparameters(
        epochs=epochs,
        fine_tune_epochs=fine_tune,
        batch_size=batch_size,
        learning_rate=learning_rate,
        weights=read.str("weights", "imagenet", "imagenet", WEIGHTS),
        mixed_precision=read.str("mixedPrecision", "auto", "auto", MIXED_PRECISION),
        backbone=read.str("backbone", BACKBONES[0], BACKBONES[0], BACKBONES),
        num_classes=_num_classes(read),
    )


def _num_classes(read: Reader) -> int | None:
    value = read.number("numClasses", None, int, "5")
    if value is not None and value < 2:
        raise ConfigError(
            "numClasses", f"must be at least 2, got {value}", set_fix("numClasses", "5") + " or remove it"
        )
    return value
