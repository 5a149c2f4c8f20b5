"""Which tf.distribute strategy and precision policy to use, chosen from the environment by pure functions."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import tensorflow as tf

from trainer.errors import TrainerError

StrategyKind = Literal["multi_worker", "mirrored", "default"]
# Roles that train under MultiWorkerMirroredStrategy; "ps" and "evaluator" tasks do not.
TRAINING_ROLES = ("chief", "worker")


@dataclass(frozen=True)
class Role:
    task_type: str
    task_id: int
    is_chief: bool


def parse_tf_config(tf_config: str | None) -> dict:
    if not tf_config:
        return {}
    try:
        config = json.loads(tf_config)
    except json.JSONDecodeError as exc:
        raise TrainerError(f"TF_CONFIG is not valid JSON ({exc}); unset it or fix the launcher") from exc
    if not isinstance(config, dict):
        raise TrainerError("TF_CONFIG must be a JSON object with 'cluster' and 'task'")
    return config


def training_task_count(config: dict) -> int:
    cluster = config.get("cluster", {})
    return sum(len(cluster.get(role, [])) for role in TRAINING_ROLES)


def strategy_kind(tf_config: str | None, gpu_count: int) -> StrategyKind:
    """TF_CONFIG with more than one training task -> multi_worker; several GPUs -> mirrored; else default."""
    if training_task_count(parse_tf_config(tf_config)) > 1:
        return "multi_worker"
    if gpu_count > 1:
        return "mirrored"
    return "default"


def role(tf_config: str | None) -> Role:
    """The chief is the `chief` task, or worker 0 when the cluster has no chief (TF's convention)."""
    config = parse_tf_config(tf_config)
    task = config.get("task") or {}
    task_type, task_id = task.get("type", "chief"), int(task.get("index", 0))
    has_chief = bool(config.get("cluster", {}).get("chief"))
    is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0 and not has_chief)
    return Role(task_type, task_id, is_chief)


def make_strategy(kind: StrategyKind) -> tf.distribute.Strategy:
    if kind == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if kind == "mirrored":
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def use_mixed_precision(mode: str, gpu_compute_capabilities: list[tuple[int, int] | None]) -> bool:
    """auto: float16 only when every GPU has tensor cores (compute capability >= 7.0); never on CPU."""
    if mode == "on":
        return True
    if mode == "off":
        return False
    return bool(gpu_compute_capabilities) and all(
        cc is not None and cc >= (7, 0) for cc in gpu_compute_capabilities
    )


def gpu_compute_capabilities() -> list[tuple[int, int] | None]:
    return [
        tf.config.experimental.get_device_details(gpu).get("compute_capability")
        for gpu in tf.config.list_physical_devices("GPU")
    ]
