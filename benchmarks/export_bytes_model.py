"""What the second SavedModel of an export costs: `<model_dir>/serving_bytes/` (batch prediction from image
files, trainer/export.py BYTES_MODEL_DIR) beside the model dir's own. Prints the whole export's seconds, the
part spent saving serving_bytes/, and both directories' sizes, for a DenseNet121 (weights none).

    .venv/bin/python benchmarks/export_bytes_model.py [--image-size 64] [--classes 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import tensorflow as tf

import trainer  # noqa: F401  sets TF_USE_LEGACY_KERAS before TensorFlow loads
from trainer import export, model
from trainer.distribute import Role


def size_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--classes", type=int, default=2)
    args = parser.parse_args()
    net = model.build(args.image_size, None, args.classes)
    names = [f"class{i}" for i in range(args.classes)]
    saves: list[float] = []
    original = tf.saved_model.save

    def timed(*a, **k):  # each tf.saved_model.save of the export, in order
        start = time.perf_counter()
        original(*a, **k)
        saves.append(time.perf_counter() - start)

    tf.saved_model.save = timed
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "model"
        start = time.perf_counter()
        export.export(net, str(out), args.image_size, Role("chief", 0, True), names)
        total = time.perf_counter() - start
        bytes_dir = out / export.BYTES_MODEL_DIR
        own, extra = size_mib(out) - size_mib(bytes_dir), size_mib(bytes_dir)
        print(f"export: {total:.1f}s in all; model dir save {saves[0]:.1f}s, serving_bytes/ {saves[1]:.1f}s")
        print(f"sizes: model dir {own:.1f} MiB, serving_bytes/ {extra:.1f} MiB")


if __name__ == "__main__":
    main()
