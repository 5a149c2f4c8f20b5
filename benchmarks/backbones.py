"""The trainer's backbones side by side on the same data and machine: CPU training steps/s and accuracy.

Data: generated images of three classes (an ellipse whose colour is the class, on a noisy background), written
by the trainer's own create_tfrecords (folder source). No ImageNet weights can be downloaded here, so every
backbone trains from scratch (`--weights none`: the whole network trains), --epochs epochs, then two epochs
of fine-tuning its top block only; the same seed, batches and learning rate for all.

    .venv/bin/python benchmarks/backbones.py [--image-size 64] [--per-class 80] [--epochs 4] [--batch 16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import tf_keras as keras
from PIL import Image

import trainer  # noqa: F401  sets TF_USE_LEGACY_KERAS before TensorFlow loads
from trainer import backbones, create_tfrecords, data, loaders, model

CLASSES = ["blue", "green", "red"]


def write_data(root: Path, per_class: int, size: int) -> Path:
    rng = np.random.default_rng(0)
    for label, name in enumerate(CLASSES):
        (root / "images" / name).mkdir(parents=True)
        for i in range(per_class):
            image = loaders.synthetic_image(rng, label, size)
            Image.fromarray(image).save(root / "images" / name / f"{i}.png")
    args = ["--source", "folder", "--folder", str(root / "images"), "--output", str(root / "data")]
    create_tfrecords.run(create_tfrecords.parse_args([*args, "--image-size", str(size)]))
    return root / "data"


class StepTimer(keras.callbacks.Callback):
    """Seconds per training step, over every epoch but the first (which traces and warms up)."""

    def __init__(self) -> None:
        super().__init__()
        self.durations: list[float] = []
        self.started = 0.0

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self.started = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.durations.append(time.perf_counter() - self.started)


def steps_per_second(timer: StepTimer, steps: int) -> float:
    return 1.0 / float(np.median(timer.durations[steps:] or timer.durations))


def measure(name: str, data_dir: str, size: int, epochs: int, batch: int, train_images: int) -> dict:
    keras.utils.set_random_seed(0)
    spec = backbones.get(name)
    train_ds = data.train_dataset(data_dir, size, batch)
    valid_ds = data.valid_dataset(data_dir, size, batch)
    steps = train_images // batch
    net = model.build(size, None, len(CLASSES), name)
    model.compile_for(net, 1e-3, len(CLASSES))
    scratch = StepTimer()
    net.fit(train_ds, epochs=epochs, steps_per_epoch=steps, callbacks=[scratch], verbose=0)
    tuned = model.unfreeze_top(net, spec.top_block)
    model.compile_for(net, 1e-4, len(CLASSES))
    fine = StepTimer()
    net.fit(train_ds, epochs=2, steps_per_epoch=steps, callbacks=[fine], verbose=0)
    _, accuracy = net.evaluate(valid_ds, verbose=0)
    return {
        "backbone": name,
        "params_m": net.count_params() / 1e6,
        "top_layers": tuned,
        "scratch_steps_s": steps_per_second(scratch, steps),
        "fine_tune_steps_s": steps_per_second(fine, steps),
        "val_accuracy": accuracy,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--per-class", type=int, default=80)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch", type=int, default=16)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = write_data(Path(tmp), args.per_class, args.image_size)
        train_images = sum(create_tfrecords.metadata.read(str(data_dir)).counts["train"].values())
        rows = [
            measure(name, str(data_dir), args.image_size, args.epochs, args.batch, train_images)
            for name in backbones.BACKBONES
        ]
    print(
        f"{len(CLASSES)} classes, {train_images} train images at {args.image_size} px, batch {args.batch}, "
        f"{args.epochs} epochs from scratch + 2 fine-tuning the top block, on the CPU"
    )
    print(
        "| backbone | params (M) | top-block layers | steps/s whole net | steps/s top block | val accuracy |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['backbone']} | {r['params_m']:.1f} | {r['top_layers']} | {r['scratch_steps_s']:.2f} | "
            f"{r['fine_tune_steps_s']:.2f} | {r['val_accuracy']:.2f} |"
        )


if __name__ == "__main__":
    main()
