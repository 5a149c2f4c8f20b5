"""The `experiment` stack key: which Vertex AI experiment a cloud stack's training job is linked to."""

from __future__ import annotations

import pytest

from infra.config import ConfigError
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from tests.stack.conftest import run_stack, stack_config


def _jobs(stack: str, **overrides: object) -> dict[str, dict]:
    return {r.name: r.inputs for r in run_stack(stack, **overrides).by_type(RESOURCE_TYPE)}


def test_a_cloud_stack_links_its_training_job_to_the_stacks_experiment_and_a_run_per_run_dir() -> None:
    jobs = _jobs("dev")
    train = jobs["train"]
    run_hash = train["base_output_dir"].rsplit("/", 1)[-1]
    assert train["base_output_dir"] == f"gs://acme-vt-dev-dev-training/runs/{run_hash}"
    assert (train["experiment"], train["experiment_run"]) == ("vertex-training-dev", f"train-{run_hash}")
    assert "experiment" not in jobs["data-prep"] and "experiment_run" not in jobs["data-prep"]


def test_another_learning_rate_is_another_run_in_the_same_experiment() -> None:
    first, second = _jobs("dev")["train"], _jobs("dev", learningRate=0.01)["train"]
    assert first["experiment"] == second["experiment"]
    assert first["experiment_run"] != second["experiment_run"]


@pytest.mark.parametrize("off", [False, "false"])
def test_false_turns_the_link_off(off: object) -> None:
    assert stack_config("dev", experiment=off).experiment is None
    assert "experiment" not in _jobs("dev", experiment=off)["train"]


def test_a_name_of_ones_own_and_local_stacks() -> None:
    assert stack_config("dev", experiment="team-vision-2026").experiment == "team-vision-2026"
    assert (
        stack_config("local").experiment is None
        and stack_config("local", experiment="abcd").experiment is None
    )


def test_a_stack_with_tensorboard_is_not_linked_unless_asked_and_cannot_be() -> None:
    assert stack_config("prod").experiment is None  # prod streams to a Vertex TensorBoard
    with pytest.raises(
        ConfigError, match=r"vertex-training:experiment: cannot be set with tensorboard: true"
    ):
        stack_config("prod", experiment="vertex-training-prod")


@pytest.mark.parametrize("bad", ["Dev", "abc", "with_underscore", 7])
def test_a_bad_name_is_refused_with_the_fix(bad: object) -> None:
    with pytest.raises(
        ConfigError,
        match=r"is not an experiment name.*pulumi config set --stack dev vertex-training:experiment",
    ):
        stack_config("dev", experiment=bad)


def test_a_multi_worker_job_is_not_linked() -> None:
    # Vertex "Run training job with experiment tracking": not available with distributed training.
    train = _jobs("dev", workerCount=1)["train"]
    assert "experiment" not in train and "experiment_run" not in train
