"""Config errors a person can act on: near-miss keys, the committed example ids, and how the program ends."""

from __future__ import annotations

import runpy

import pulumi
import pytest
from pulumi.runtime import config as runtime_config

from infra.config import ConfigError, load_config, placeholders
from tests.fakes.pulumi_mocks import run_program
from tests.stack.conftest import CLOUD_STACKS, LOCAL_STACKS, ROOT, committed_values, own_ids, stack_values


def error(stack: str, **overrides: object) -> str:
    with pytest.raises(ConfigError) as raised:
        load_config(stack_values(stack, **overrides), stack)
    return str(raised.value)


@pytest.mark.parametrize(
    ("key", "value", "right", "shown"),
    [
        ("learning_rate", 0.01, "learningRate", "0.01"),
        ("epoch", 3, "epochs", "3"),
        ("gpuType", "NVIDIA_L4", "acceleratorType", "NVIDIA_L4"),
        ("gpu_count", 2, "acceleratorCount", "2"),
        ("preemptible", True, "spot", "true"),
        ("Region", "europe-west4", "region", "europe-west4"),
        ("timeout", 600, "timeoutSeconds", "600"),
        ("dataFolders", "gs://b/my images", "dataFolder", "'gs://b/my images'"),
    ],
)
def test_a_near_miss_key_gets_did_you_mean_and_the_two_commands(key, value, right, shown) -> None:
    message = error("dev", **{key: value})
    assert message == (
        f"vertex-training:{key}: is not a known key. Fix: did you mean vertex-training:{right}? run "
        f"`pulumi config rm --stack dev vertex-training:{key}` and "
        f"`pulumi config set --stack dev vertex-training:{right} {shown}`"
    )


def test_a_near_miss_key_holding_a_list_is_renamed_in_the_stack_file() -> None:
    message = error("dev", fallback=[{"machineType": "g2-standard-4"}])
    assert message.endswith(
        "did you mean vertex-training:fallbacks? rename fallback to fallbacks in Pulumi.dev.yaml"
    )
    # As the runtime hands it over: a JSON string.
    assert error("dev", fallback='[{"machineType": "g2-standard-4"}]') == message


def test_a_key_like_none_of_ours_is_removed_without_a_dump_of_every_key() -> None:
    message = error("prod", colour="blue")
    assert message == (
        "vertex-training:colour: is not a known key. Fix: remove it with "
        "`pulumi config rm --stack prod vertex-training:colour` (docs/stack.md lists the keys)"
    )


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_the_committed_example_ids_are_refused_with_the_command_that_sets_real_ones(stack: str) -> None:
    committed = committed_values(stack)
    assert committed["vertex-training:gcpProject"] in placeholders.PROJECTS
    assert committed["vertex-training:billingAccount"] in placeholders.BILLING_ACCOUNTS
    with pytest.raises(ConfigError) as raised:
        load_config(committed, stack)
    project = committed["vertex-training:gcpProject"]
    assert str(raised.value) == (
        f"vertex-training:gcpProject: {project!r} is an example from this project's stack files and docs, "
        f"not your project. Fix: run `pulumi config set --stack {stack} vertex-training:gcpProject "
        "<your-project-id>` (`gcloud projects list` shows the ids you can use)"
    )
    real_project = {**committed, "vertex-training:gcpProject": own_ids(stack)["gcpProject"]}
    with pytest.raises(ConfigError) as raised:
        load_config(real_project, stack)
    assert str(raised.value) == (
        "vertex-training:billingAccount: '012345-6789AB-CDEF01' is an example from this project's stack "
        f"files and docs, not your billing account. Fix: run `pulumi config set --stack {stack} "
        "vertex-training:billingAccount <ACCOUNT_ID>` (the ACCOUNT_ID column of `gcloud billing accounts "
        "list`)"
    )
    assert load_config(stack_values(stack), stack).gcp_project == own_ids(stack)["gcpProject"]


def test_the_readme_and_stack_docs_example_project_is_refused_too() -> None:
    assert "my-project" in error("dev", gcpProject="my-project")


@pytest.mark.parametrize("stack", LOCAL_STACKS)
def test_a_local_stack_never_reaches_google_so_its_ids_are_not_checked(stack: str) -> None:
    cfg = load_config(stack_values(stack, gcpProject="my-training-dev"), stack)
    assert cfg.is_local


def test_a_missing_billing_account_names_the_command_not_the_example() -> None:
    message = error("dev", billingAccount=None)
    assert "012345" not in message and "vertex-training:billingAccount <ACCOUNT_ID>" in message


def test_the_program_ends_with_a_run_error_holding_only_the_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """__main__.py as the Pulumi CLI runs it. The language host (pulumi-language-python-exec) logs a RunError
    as `str(error)` alone; any other exception as "Program failed with an unhandled exception:" and its
    traceback."""
    strings = {k: str(v) for k, v in committed_values("dev").items() if not isinstance(v, list | dict)}
    monkeypatch.setattr(runtime_config, "CONFIG", type(runtime_config.CONFIG)("test_config", default=strings))
    with pytest.raises(pulumi.RunError) as raised:
        run_program(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"), stack="dev")
    assert str(raised.value).startswith("vertex-training:gcpProject: 'my-training-dev' is an example")
    assert "\n" not in str(raised.value) and "Traceback" not in str(raised.value)
    assert raised.value.__suppress_context__ and raised.value.__cause__ is None
