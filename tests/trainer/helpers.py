"""Shared helpers for the trainer tests: generated data sets and trainer subprocesses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SIZE = 32  # DenseNet121's smallest input: keeps CPU training to seconds


def make_synthetic(
    output: Path, count: int = 128, size: int = SIZE, seed: int = 1, shard_size: int = 32
) -> dict:
    """Writes a synthetic TFRecords data set in-process; returns its metadata as a dict."""
    from trainer import create_tfrecords

    args = create_tfrecords.parse_args(
        [
            "--source",
            "synthetic",
            "--count",
            str(count),
            "--image-size",
            str(size),
            "--output",
            str(output),
            "--seed",
            str(seed),
            "--shard-size",
            str(shard_size),
        ]
    )
    create_tfrecords.run(args)
    return json.loads((output / "metadata.json").read_text())


def trainer_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIP_", "TF_CONFIG"))}
    env.update(extra)
    return env


def task_command(data_dir: Path, model_dir: Path, *more: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "trainer.task",
        "--data-dir",
        str(data_dir),
        "--model-dir",
        str(model_dir),
        "--weights",
        "none",
        "--batch-size",
        "16",
        *more,
    ]


def run(
    cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=REPO, env=env or trainer_env(), capture_output=True, text=True, timeout=timeout
    )


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def epoch_lines(log: str, phase: str) -> list[str]:
    return [line for line in log.splitlines() if f" {phase} epoch " in line]


def make_class_folder(
    root: Path, classes: list[str], per_class: int, size: int = SIZE, seed: int = 3
) -> Path:
    """One sub-folder of generated PNG photos-to-be per class; class i's ellipse has loaders.PALETTE[i]."""
    import numpy as np
    from PIL import Image

    from trainer.loaders import synthetic_image

    rng = np.random.default_rng(seed)
    for label, name in enumerate(classes):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray(synthetic_image(rng, label, size)).save(root / name / f"{i:03d}.png")
    return root


def make_folder_data(folder: Path, output: Path, *more: str, size: int = SIZE) -> dict:
    """`create_tfrecords --source folder` in-process; returns the metadata as a dict."""
    from trainer import create_tfrecords

    args = ["--source", "folder", "--folder", str(folder), "--output", str(output), "--image-size", str(size)]
    create_tfrecords.run(create_tfrecords.parse_args([*args, *more]))
    return json.loads((output / "metadata.json").read_text())
