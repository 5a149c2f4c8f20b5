"""The prediction server's speed against its floor: images per second through `python -m serving` (HTTP,
JSON, base64, the server's batch call) and through the model directory's plain `serving_bytes` signature
(map_fn decode, one model call) called directly on the same batches, in one run; then the server again with
one corrupt image in every request (answered alone). DenseNet121, weights none. The three are measured in
turn, round after round, and each figure is its median round: load from other processes falls on all three.

    .venv/bin/python benchmarks/serving_speed.py [--image-size 64] [--batch 16] [--batches 12] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import tensorflow as tf
from PIL import Image

import trainer  # noqa: F401  sets TF_USE_LEGACY_KERAS before TensorFlow loads
from serving.client import LocalServer
from trainer import export, model
from trainer.distribute import Role


def jpegs(count: int, size: int, seed: int = 5) -> list[bytes]:
    """Photos-to-be a little larger than the model's input (the server resizes and crops them)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        pixels = rng.integers(0, 256, (size + 16, size + 24, 3), np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=90)
        out.append(buffer.getvalue())
    return out


def rate(batches: list[list[bytes]], call) -> float:
    start = time.perf_counter()
    for batch in batches:
        call(batch)
    return sum(len(b) for b in batches) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        net = model.build(args.image_size, None, 2)
        export.export(net, str(model_dir), args.image_size, Role("chief", 0, True), ["cats", "dogs"])
        images = jpegs(args.batch * args.batches, args.image_size)
        batches = [images[i : i + args.batch] for i in range(0, len(images), args.batch)]

        signature = tf.saved_model.load(str(model_dir)).signatures[export.BYTES_SIGNATURE]
        started = time.perf_counter()
        with LocalServer(str(model_dir)) as server:
            healthy = time.perf_counter() - started
            corrupt = [[*b[:-1], b"not an image"] for b in batches]
            calls = {
                "plain": (batches, lambda b: signature(**{export.BYTES_INPUT: tf.constant(b)})),
                "served": (batches, server.predict),
                "corrupt": (corrupt, server.predict),
            }
            for sent, call in calls.values():  # warm-up: a graph's first call pays for its optimisation
                call(sent[0])
            rounds = {name: [] for name in calls}
            for _ in range(args.rounds):
                for name, (sent, call) in calls.items():
                    rounds[name].append(rate(sent, call))
    plain, served, with_corrupt = (statistics.median(rounds[name]) for name in ("plain", "served", "corrupt"))
    rows = [
        ("plain serving_bytes signature, called directly", plain),
        ("python -m serving over HTTP", served),
        ("  with one corrupt image in each request", with_corrupt),
    ]
    print(
        f"DenseNet121 at {args.image_size} px, {args.batches} requests of {args.batch} JPEGs, "
        f"median of {args.rounds} rounds"
    )
    for name, value in rows:
        print(f"{name:<48} {value:7.1f} images/s ({value / plain:.2f}x the plain signature)")
    print(f"{'server start to healthy (this model)':<48} {healthy:7.1f} s")


if __name__ == "__main__":
    main()
