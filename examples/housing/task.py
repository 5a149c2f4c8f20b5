"""Train the house-price regressor: python -m housing.task [--rows N] [--epochs N] [--batch-size N] ...

Paths come from the job's environment (docs/trainer-contract.md): AIP_MODEL_DIR receives a SavedModel and
metrics.json, AIP_CHECKPOINT_DIR the per-epoch backup a restarted job resumes from, AIP_TENSORBOARD_LOG_DIR
the TensorBoard logs. Local paths or gs:// URIs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import tensorflow as tf
import tf_keras as keras

from housing import data


def whole_number(text: str) -> int:
    """An integer flag that takes "2.0" as 2: a tuning study may send an INTEGER or DISCRETE value as a double
    (docs/trainer-contract.md, "To be tuned")."""
    number = float(text)
    if not number.is_integer():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(number)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m housing.task", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=whole_number, default=400, help="synthetic house sales to generate")
    parser.add_argument("--seed", type=whole_number, default=0)
    parser.add_argument("--epochs", type=whole_number, default=20)
    parser.add_argument("--batch-size", type=whole_number, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    return parser.parse_args(argv)


def required_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        sys.exit(f"{name} is not set: run this as a Vertex AI job or the stack's local runner, or set it")
    return value


def build_model(train_features, learning_rate: float) -> keras.Model:
    normalize = keras.layers.Normalization(name="normalize")
    normalize.adapt(train_features)
    inputs = keras.Input(shape=(len(data.FEATURES),), name="features")
    hidden = keras.layers.Dense(32, activation="relu")(normalize(inputs))
    outputs = keras.layers.Dense(1, name="price")(keras.layers.Dense(16, activation="relu")(hidden))
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(learning_rate), loss="mse", metrics=["mae"])
    return model


class EpochLog(keras.callbacks.Callback):
    """One line per epoch; the first says so when the run resumed from a checkpoint."""

    def __init__(self, epochs: int):
        super().__init__()
        self.epochs, self.first = epochs, True

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self.first and epoch > 0:
            print(f"resumed from checkpoint at epoch {epoch + 1}/{self.epochs}", flush=True)
        self.first = False

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        values = " ".join(f"{k}={v:.3f}" for k, v in sorted((logs or {}).items()))
        print(f"epoch {epoch + 1}/{self.epochs} {values}", flush=True)


class ReportMetric(keras.callbacks.Callback):
    """For a tuning study: the metric named by CLOUD_ML_HP_METRIC_TAG (set by the stack on trials), once per
    epoch, in cloudml-hypertune's file format (what its report_hyperparameter_tuning_metric writes, read
    2026-11-22): JSON lines with sorted keys in CLOUD_ML_HP_METRIC_FILE (default
    /tmp/hypertune/output.metrics). With cloudml-hypertune in requirements.txt, the library does the same."""

    def __init__(self, tag: str):
        super().__init__()
        self.tag, self.reports = tag, []
        self.path = Path(os.environ.get("CLOUD_ML_HP_METRIC_FILE", "/tmp/hypertune/output.metrics"))

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        value = (logs or {}).get(self.tag)
        if value is None:
            return
        trial = os.environ.get("CLOUD_ML_TRIAL_ID", "0")
        report = {"global_step": str(epoch + 1), self.tag: str(float(value)), "timestamp": time.time()}
        self.reports = [*self.reports, {**report, "trial": trial}][-100:]  # the library keeps the last 100
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in self.reports))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    model_dir = required_env("AIP_MODEL_DIR")
    checkpoint_dir = required_env("AIP_CHECKPOINT_DIR")
    tensorboard_dir = os.environ.get("AIP_TENSORBOARD_LOG_DIR")
    keras.utils.set_random_seed(args.seed)
    (train_x, train_y), (valid_x, valid_y) = data.split(*data.houses(args.rows, args.seed))
    features = ", ".join(data.FEATURES)
    print(f"{len(train_x)} train / {len(valid_x)} valid rows; features {features}", flush=True)
    model = build_model(train_x, args.learning_rate)
    callbacks = [
        # Saved at every epoch end; after a restart, fit() starts at the epoch after the last one saved.
        keras.callbacks.BackupAndRestore(checkpoint_dir),
        EpochLog(args.epochs),
        *(
            [ReportMetric(os.environ["CLOUD_ML_HP_METRIC_TAG"])]
            if os.environ.get("CLOUD_ML_HP_METRIC_TAG")
            else []
        ),
        *([keras.callbacks.TensorBoard(tensorboard_dir)] if tensorboard_dir else []),
    ]
    fit = model.fit(
        train_x,
        train_y,
        validation_data=(valid_x, valid_y),
        epochs=args.epochs,
        batch_size=args.batch_size,
        callbacks=callbacks,
        verbose=0,
    )
    val_loss, val_mae = model.evaluate(valid_x, valid_y, verbose=0)
    model.save(model_dir)  # a SavedModel: serving_default takes `features` [None, 4], returns `price`
    metrics = {
        "val_loss": float(val_loss),
        "val_mae": float(val_mae),
        "epochs": args.epochs,
        # Per epoch, for `make runs` plots (after a restart: the epochs this process ran).
        "history": {name: [float(v) for v in values] for name, values in fit.history.items()},
    }
    with tf.io.gfile.GFile(f"{model_dir.rstrip('/')}/metrics.json", "w") as f:
        f.write(json.dumps(metrics))
    print(f"model written to {model_dir}: val_mae={val_mae:.2f} (thousands)", flush=True)


if __name__ == "__main__":
    main()
