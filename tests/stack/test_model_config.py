"""The dataset / backbone / class-count keys: validated with the key's name, passed to the trainer CLIs."""

from __future__ import annotations

import pytest

from infra import config
from infra.config import ConfigError
from infra.workloads.jobs import JobPlan, data_args, train_args
from tests.stack.conftest import stack_config

PLAN = JobPlan(root="gs://b", data_hash="d" * 12, train_hash="t" * 12)


def test_backbone_choices_match_the_trainer_registry() -> None:
    from trainer import backbones

    assert tuple(backbones.BACKBONES) == config.BACKBONES
    assert config.BACKBONES[0] == backbones.DEFAULT


@pytest.mark.parametrize(
    ("overrides", "key", "message"),
    [
        ({"dataSource": "synthetic", "tfdsName": "cassava"}, "tfdsName", "only used with dataSource tfds"),
        ({"dataSource": "tfds", "tfdsName": "Cassava Leaves"}, "tfdsName", "not a TensorFlow Datasets name"),
        ({"backbone": "vgg16"}, "backbone", "'vgg16' is not one of densenet121, resnet50, efficientnetv2b0"),
        ({"numClasses": 1}, "numClasses", "must be at least 2"),
    ],
)
def test_bad_values_name_the_key(overrides: dict, key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as exc:
        stack_config("dev", **overrides)
    assert exc.value.key == key


def test_keys_reach_the_trainer_command_lines() -> None:
    from trainer import create_tfrecords, task

    cfg = stack_config("dev", tfdsName="tf_flowers", backbone="efficientnetv2b0", numClasses=5)
    assert create_tfrecords.parse_args(data_args(cfg, PLAN)).tfds_name == "tf_flowers"
    args = task.parse_args(train_args(cfg, PLAN), env={"AIP_MODEL_DIR": "gs://b/m"})
    assert (args.backbone, args.num_classes) == ("efficientnetv2b0", 5)

    default = stack_config("dev")  # dev: cats_vs_dogs by default, DenseNet121, class count from the data
    assert create_tfrecords.parse_args(data_args(default, PLAN)).tfds_name == "cats_vs_dogs"
    args = task.parse_args(train_args(default, PLAN), env={"AIP_MODEL_DIR": "gs://b/m"})
    assert (args.backbone, args.num_classes) == ("densenet121", None)
