"""Stack configuration: committed files load, defaults are sane, bad values fail naming the key."""

from __future__ import annotations

import pytest

from infra.config import ConfigError, load_config
from tests.fakes.pulumi_mocks import run_program
from tests.stack.conftest import LOCAL_STACKS, STACKS, stack_config, stack_values


@pytest.mark.parametrize("stack", STACKS)
def test_committed_stack_files_load(stack: str) -> None:
    cfg = stack_config(stack)
    assert cfg.stack == stack
    assert cfg.runner == ("local" if stack in LOCAL_STACKS else "vertex")


def test_stack_files_differ_where_the_environments_do() -> None:
    local, dev, prod = (stack_config(s) for s in ("local", "dev", "prod"))
    assert local.budget is None and not local.kill_switch
    assert local.data.source == "synthetic" and local.data.image_size <= 96
    assert dev.spot and dev.force_destroy and not dev.protect and dev.kill_switch
    assert dev.accelerator_type and dev.accelerator_count >= 1
    assert prod.protect and not prod.force_destroy and prod.kill_switch and prod.tensorboard
    assert prod.worker_count >= 1 and prod.accelerator_count >= 2
    assert dev.budget.amount < prod.budget.amount


def test_pulumi_runtime_strings_parse_like_yaml() -> None:
    """`pulumi.Config` hands every value over as a string; lists arrive JSON-encoded."""
    typed = stack_config("dev")
    as_strings = {
        k: (
            str(v).lower()
            if isinstance(v, bool)
            else repr(v).replace("'", '"')
            if isinstance(v, list)
            else str(v)
        )
        for k, v in stack_values("dev").items()
    }
    assert load_config(as_strings, "dev") == typed


def test_defaults_for_a_minimal_cloud_stack() -> None:
    cfg = load_config(
        {
            "vertex-training:gcpProject": "acme-vt-staging",
            "vertex-training:billingAccount": "0A1B2C-3D4E5F-6A7B8C",
        },
        "staging",
    )
    assert cfg.region == "us-central1"
    assert cfg.kill_switch and cfg.kill_switch_threshold == 1.0
    assert cfg.budget.thresholds == (0.5, 0.9, 1.0) and cfg.budget.forecast_thresholds == (1.0,)
    assert not cfg.force_destroy and not cfg.protect and cfg.timeout_seconds == 7200
    assert cfg.bucket_name == "acme-vt-staging-staging-training"


def test_local_dir_resolves_against_the_repository(tmp_path) -> None:
    cfg = load_config({"vertex-training:localDir": "out/here"}, "local", root=tmp_path)
    assert cfg.local_dir == str(tmp_path / "out/here")


BAD = [
    # (stack, overrides, key the message must name, words it must contain)
    ("dev", {"gcpProject": None}, "gcpProject", "required"),
    ("dev", {"gcpProject": "My_Project"}, "gcpProject", "project id"),
    ("dev", {"region": "us-central1-a"}, "region", "region"),
    ("dev", {"region": "Europe West"}, "region", "region"),
    ("dev", {"runner": "kubernetes"}, "runner", "vertex"),
    ("dev", {"billingAccount": None}, "billingAccount", "required"),
    ("dev", {"billingAccount": "12345"}, "billingAccount", "billing account"),
    ("dev", {"budgetAmount": 0}, "budgetAmount", "greater than 0"),
    ("dev", {"budgetAmount": "lots"}, "budgetAmount", "number"),
    ("dev", {"budgetCurrency": "dollars"}, "budgetCurrency", "ISO 4217"),
    ("dev", {"budgetThresholds": [0.5, -1]}, "budgetThresholds", "fraction"),
    ("dev", {"budgetThresholds": "0.5"}, "budgetThresholds", "list"),
    ("dev", {"budgetForecastThresholds": [1.0, 1.0]}, "budgetForecastThresholds", "duplicate"),
    ("dev", {"budgetEmails": ["not-an-address"]}, "budgetEmails", "e-mail"),
    ("dev", {"budgetEmails": [f"u{i}@example.com" for i in range(6)]}, "budgetEmails", "at most 5"),
    ("dev", {"machineType": "g2-standard-8"}, "machineType", "NVIDIA_TESLA_T4"),
    ("dev", {"machineType": "n1 standard"}, "machineType", "machine type"),
    ("dev", {"acceleratorType": "NVIDIA_TESLA_K9000"}, "acceleratorType", "unknown"),
    ("dev", {"acceleratorCount": 0}, "acceleratorCount", "at least 1"),
    ("dev", {"acceleratorType": "none", "acceleratorCount": 2}, "acceleratorCount", "acceleratorType"),
    ("dev", {"dataMachineType": "a2-highgpu-1g"}, "dataMachineType", "GPUs"),
    ("dev", {"workerCount": -1}, "workerCount", "0 or more"),
    ("dev", {"workerCount": 1.5}, "workerCount", "whole number"),
    ("dev", {"spot": "sometimes"}, "spot", "true or false"),
    ("dev", {"timeoutSeconds": 0}, "timeoutSeconds", "greater than 0"),
    ("dev", {"timeoutSeconds": 30 * 24 * 3600}, "timeoutSeconds", "at most"),
    ("dev", {"dataSource": "s3"}, "dataSource", "synthetic"),
    ("dev", {"dataSource": "folder"}, "dataFolder", "required"),
    ("dev", {"dataSource": "folder", "dataFolder": "/home/me/pets"}, "dataFolder", "cloud job"),
    ("dev", {"dataFolder": "gs://b/pets"}, "dataFolder", "only used"),
    ("dev", {"dataCount": -5}, "dataCount", "greater than 0"),
    ("dev", {"imageSize": 8}, "imageSize", "between 32 and 512"),
    ("dev", {"epochs": 0}, "epochs", "greater than 0"),
    ("dev", {"fineTuneEpochs": -1}, "fineTuneEpochs", "0 or more"),
    ("dev", {"batchSize": 0}, "batchSize", "greater than 0"),
    ("dev", {"learningRate": 5}, "learningRate", "at most"),
    ("dev", {"weights": "random"}, "weights", "imagenet"),
    ("dev", {"mixedPrecision": False}, "mixedPrecision", "string"),
    ("dev", {"forceDestroy": "yes"}, "forceDestroy", "true or false"),
    ("dev", {"killSwitchThreshold": -0.5}, "killSwitchThreshold", "greater than 0"),
    ("dev", {"timeoutSecs": 60}, "timeoutSecs", "timeoutSeconds"),
    ("prod", {"machinetype": "n1-standard-4"}, "machinetype", "did you mean vertex-training:machineType"),
    ("local", {"imageSize": "big"}, "imageSize", "number"),
]


@pytest.mark.parametrize(("stack", "overrides", "key", "words"), BAD, ids=[f"{b[0]}-{b[2]}" for b in BAD])
def test_bad_configuration_fails_naming_the_key_before_any_resource(stack, overrides, key, words) -> None:
    """The whole program runs under mocks: the error names the key and the fix, and nothing was registered."""
    from infra.stack import build

    errors: list[ConfigError] = []

    def program() -> dict:
        try:
            return build(load_config(stack_values(stack, **overrides), stack))
        except ConfigError as error:
            errors.append(error)
            return {}

    run = run_program(program, stack=stack)
    assert len(errors) == 1, "expected a ConfigError"
    message = str(errors[0])
    assert message.startswith(f"vertex-training:{key}:"), message
    assert words in message, message
    assert "Fix:" in message
    assert run.resources == []


def test_bad_stack_name_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"stack name.*lowercase"):
        load_config({}, "My.Stack")
