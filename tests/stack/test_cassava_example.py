"""Pulumi.cassava.yaml reproduces the second source workflow: ResNet50 on tfds cassava, one n1 machine with
2 x T4, MirroredStrategy, mixed precision. Checked on the jobs the stack registers, through the trainer's own
argument parsers and strategy choice, with the environment a Vertex replica of that job gets."""

from __future__ import annotations

import json

import pytest

from infra.vertex.custom_job import spec
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from infra.vertex.lifecycle.output_files import output_dirs
from infra.vertex.runners.local import runner as local_runner
from tests.stack.conftest import run_stack, stack_config
from tests.vertex.props import custom_job_request

# NVIDIA's CUDA GPU table: Tesla T4 (Turing) has compute capability 7.5, i.e. tensor cores.
T4_COMPUTE_CAPABILITY = (7, 5)


@pytest.fixture(scope="module")
def jobs() -> dict[str, dict]:
    # As the provider sees them: Pulumi sends numbers as doubles, the provider reads whole ones as ints.
    return {r.name: spec.with_defaults(r.inputs) for r in run_stack("cassava").by_type(RESOURCE_TYPE)}


def test_data_job_prepares_cassava_through_tfds(jobs: dict[str, dict]) -> None:
    from trainer import create_tfrecords

    (pool,) = jobs["data-prep"]["worker_pools"]
    args = create_tfrecords.parse_args(pool["args"])
    assert (args.source, args.tfds_name, args.image_size, args.count) == ("tfds", "cassava", 224, None)
    assert "accelerator_type" not in pool  # data preparation needs no GPU


def test_training_job_is_resnet50_on_one_machine_with_two_t4s(jobs: dict[str, dict]) -> None:
    from trainer import task

    train = jobs["train"]
    (pool,) = train["worker_pools"]  # one pool: no workers, no parameter servers
    assert pool["machine_type"].startswith("n1-")
    assert (pool["accelerator_type"], pool["accelerator_count"], pool["replica_count"]) == (
        "NVIDIA_TESLA_T4",
        2,
        1,
    )
    assert not spec.validate(train)  # the CustomJob resource's own check accepts it (n1 takes T4)
    args = task.parse_args(pool["args"], env=output_dirs(train["base_output_dir"]))
    assert (args.backbone, args.num_classes, args.weights) == ("resnet50", 5, "imagenet")
    assert (args.batch_size, args.mixed_precision) == (64, "auto")
    data = jobs["data-prep"]["worker_pools"][0]["args"]
    assert args.data_dir == data[data.index("--output") + 1]


def test_the_trainer_would_pick_mirrored_strategy_and_float16(jobs: dict[str, dict]) -> None:
    """TF_CONFIG as Vertex sets it for this job (the local runner reproduces Vertex's), two visible GPUs."""
    from trainer import distribute

    job = custom_job_request(jobs["train"])
    (replica,) = local_runner.replica_plan(job, jobs["train"]["base_output_dir"])
    tf_config = replica["env"]["TF_CONFIG"]
    assert json.loads(tf_config)["task"] == {"type": "chief", "index": 0}
    assert distribute.strategy_kind(tf_config, gpu_count=2) == "mirrored"
    assert distribute.role(tf_config).is_chief
    assert distribute.use_mixed_precision("auto", [T4_COMPUTE_CAPABILITY] * 2)


def test_cassava_config_keys() -> None:
    cfg = stack_config("cassava")
    assert cfg.data.tfds_name == "cassava" and cfg.hyperparameters.backbone == "resnet50"
    assert cfg.hyperparameters.num_classes == 5 and cfg.worker_count == 0
