"""Training images/s per backbone, precision and phase on the device present, beside the input pipeline's
own ceiling: the numbers that choose a shape (is this GPU fed? would a cheaper one keep up?).

For each backbone the trainer offers, each precision it offers (`--mixed-precision off`: float32; `on`:
mixed_float16) and each way it trains (PHASES: with `--weights imagenet`, head = frozen backbone, then
fine_tune = its top block too; with `--weights none`, both phases train the whole network), the trainer's
own model and fit run on the trainer's own input pipeline, measured by the trainer's own throughput meter
(trainer/throughput.py: images/s and the share of step time spent waiting for input, from the end of each
epoch's first step). The trainer offers no graph-compile option (no XLA flag): every row runs Keras' default
tf.function step. The input ceiling is the same pipeline iterated with no model at all.

Data: views of the photographs scikit-image ships (benchmarks/photos.py), converted by the trainer's
create_tfrecords at --image-size. No ImageNet weights can be downloaded here: the model is built without
them and the layers of each row are frozen as that phase freezes them. A step costs the same whatever the
weights' values; the frozen rows call the backbone with BatchNorm in training mode, where the trainer with
ImageNet weights calls it in inference mode (a little cheaper).

    .venv/bin/python benchmarks/train_step.py [--image-size 64] [--batch 16] [--steps 12] [--epochs 2]
        [--backbones densenet121,...] [--precisions float32,mixed_float16]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from data_prep import write_photos

import trainer  # noqa: F401  sets TF_USE_LEGACY_KERAS before TensorFlow loads (light: no TF import)

# TensorFlow is imported inside the functions: the conversion's worker processes import this script.
PRECISIONS = {"float32": "off", "mixed_float16": "on"}  # policy -> the trainer's --mixed-precision
# What each row's phase trains (trainer/task.py): its label, and which backbone layers are trainable.
PHASES = {
    "head": "head, frozen backbone (--weights imagenet)",
    "fine_tune": "fine_tune, top block (--weights imagenet)",
    "scratch": "whole network (--weights none, both phases)",
}


def write_data(root: Path, images: int, size: int) -> str:
    from trainer import create_tfrecords

    write_photos(root / "photos", images)
    output = root / "data"
    args = ["--source", "folder", "--folder", str(root / "photos"), "--output", str(output)]
    create_tfrecords.run(create_tfrecords.parse_args([*args, "--image-size", str(size)]))
    return str(output)


def input_ceiling(data_dir: str, size: int, batch: int, batches: int) -> float:
    """Images/s of the trainer's training pipeline alone (decode, crop, batch), after a warm-up."""
    from trainer import data

    it = iter(data.train_dataset(data_dir, size, batch))
    for _ in range(5):
        next(it)
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return batches * batch / (time.perf_counter() - start)


def measure(name: str, policy: str, data_dir: str, size: int, batch: int, steps: int, epochs: int) -> dict:
    """Images/s and input wait of the last epoch of each phase (PHASES, in order)."""
    import tf_keras as keras

    from trainer import backbones, data, metadata, model
    from trainer.throughput import StepClock, ThroughputMeter

    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    spec = backbones.get(name)
    classes = len(metadata.read(data_dir).class_names)
    train_ds = data.train_dataset(data_dir, size, batch)
    net = model.build(size, None, classes, name)
    clock = StepClock()
    row: dict = {"backbone": name, "precision": policy}
    backbone = model.backbone_of(net)
    for phase in PHASES:
        if phase == "head":
            backbone.trainable = False
        elif phase == "fine_tune":
            model.unfreeze_top(net, spec.top_block)
        else:
            backbone.trainable = True
            for layer in backbone.layers:
                layer.trainable = True
        model.compile_for(net, 1e-4, classes)
        meter = ThroughputMeter(clock, batch)
        with clock.timing(net):
            net.fit(train_ds, epochs=epochs, steps_per_epoch=steps, callbacks=[meter], verbose=0)
        last = meter.history[-1]
        row[phase] = (last.images_per_second, last.input_wait_fraction) if last else (0.0, 0.0)
    keras.mixed_precision.set_global_policy("float32")
    return row


def device() -> str:
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        return f"{len(gpus)} x GPU {details.get('device_name', '?')}"
    return f"CPU ({len(os.sched_getaffinity(0))} cores)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=12, help="steps per epoch")
    p.add_argument("--epochs", type=int, default=2, help="per phase; the last one is reported")
    p.add_argument("--images", type=int, default=512, help="photographs in the data set")
    p.add_argument("--backbones", help="comma-separated (default: every backbone the trainer offers)")
    p.add_argument("--precisions", default=",".join(PRECISIONS))
    args = p.parse_args()
    from trainer import backbones

    names = args.backbones.split(",") if args.backbones else list(backbones.BACKBONES)
    policies = args.precisions.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = write_data(Path(tmp), args.images, args.image_size)
        ceiling = input_ceiling(data_dir, args.image_size, args.batch, args.steps * 4)
        rows = []
        for name in names:
            for policy in policies:
                rows.append(
                    measure(name, policy, data_dir, args.image_size, args.batch, args.steps, args.epochs)
                )
                print(f"measured {name} {policy}: {rows[-1]}", file=sys.stderr, flush=True)
        ceiling = max(ceiling, input_ceiling(data_dir, args.image_size, args.batch, args.steps * 4))
    print(
        f"{device()}, image size {args.image_size}, batch {args.batch}, {args.steps} steps x {args.epochs} "
        f"epochs per phase (last epoch shown), built without weights; "
        f"1-minute load average {os.getloadavg()[0]:.1f}"
    )
    print(f"input pipeline alone (decode, crop, batch): {ceiling:.1f} images/s")
    columns = "".join(f" {label} images/s | input wait |" for label in PHASES.values())
    print(f"| backbone | precision (--mixed-precision) |{columns} fastest / input ceiling |")
    print("|---|---|" + "---|---|" * len(PHASES) + "---|")
    for r in rows:
        cells = "".join(f" {r[p][0]:.1f} | {r[p][1]:.0%} |" for p in PHASES)
        fastest = max(r[p][0] for p in PHASES)
        precision = f"{r['precision']} ({PRECISIONS[r['precision']]})"
        print(f"| {r['backbone']} | {precision} |{cells} {fastest / ceiling:.2f} |")


if __name__ == "__main__":
    main()
