"""Strategy, role and precision choices are pure functions of the environment."""

from __future__ import annotations

import json

import pytest

from trainer.distribute import role, strategy_kind, use_mixed_precision
from trainer.errors import TrainerError


def tf_config(cluster: dict, task_type: str, index: int = 0) -> str:
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


CHIEF_WORKER = {"chief": ["a:1"], "worker": ["b:1"]}


@pytest.mark.parametrize(
    ("config", "gpus", "expected"),
    [
        (None, 0, "default"),
        (None, 1, "default"),
        (None, 2, "mirrored"),
        (tf_config({"chief": ["a:1"]}, "chief"), 4, "mirrored"),  # a one-task cluster is not multi-worker
        (tf_config(CHIEF_WORKER, "worker"), 0, "multi_worker"),
        (tf_config({"worker": ["a:1", "b:1"]}, "worker", 1), 2, "multi_worker"),
        (tf_config({"chief": ["a:1"], "evaluator": ["e:1"]}, "chief"), 1, "default"),
    ],
)
def test_strategy_kind(config: str | None, gpus: int, expected: str) -> None:
    assert strategy_kind(config, gpus) == expected


def test_role_picks_one_chief() -> None:
    assert role(None).is_chief
    assert role(tf_config(CHIEF_WORKER, "chief")).is_chief
    assert not role(tf_config(CHIEF_WORKER, "worker", 0)).is_chief
    assert role(tf_config({"worker": ["a:1", "b:1"]}, "worker", 0)).is_chief
    assert not role(tf_config({"worker": ["a:1", "b:1"]}, "worker", 1)).is_chief


def test_bad_tf_config_is_a_clear_error() -> None:
    with pytest.raises(TrainerError, match="TF_CONFIG is not valid JSON"):
        strategy_kind("{cluster", 0)


def test_mixed_precision_policy() -> None:
    assert use_mixed_precision("auto", []) is False  # CPU
    assert use_mixed_precision("auto", [(7, 0), (8, 0)]) is True  # V100, A100
    assert use_mixed_precision("auto", [(6, 0)]) is False  # P100: no tensor cores
    assert use_mixed_precision("auto", [(7, 5), (6, 1)]) is False
    assert use_mixed_precision("on", []) is True
    assert use_mixed_precision("off", [(9, 0)]) is False
