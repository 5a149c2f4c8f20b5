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
        ("datasource", "synthetic", "dataSource", "synthetic"),
        ("modeldisplayname", "cats and dogs", "modelDisplayName", "'cats and dogs'"),
    ],
)
def test_a_near_miss_key_gets_did_you_mean_and_the_two_commands(key, value, right, shown) -> None:
    message = error("dev", **{key: value})
    assert message == (
        f"vertex-training:{key}: is not a known key. Fix: did you mean vertex-training:{right}? run "
        f"`pulumi config rm --stack dev vertex-training:{key}` and "
        f"`pulumi config set --stack dev vertex-training:{right} {shown}`"
    )


def test_project_is_taken_for_gcp_project_not_protect() -> None:
    assert error("dev", project="my-own-project").endswith(
        "did you mean vertex-training:gcpProject? run `pulumi config rm --stack dev vertex-training:project` "
        "and `pulumi config set --stack dev vertex-training:gcpProject my-own-project`"
    )


def test_a_zone_given_as_zone_is_suggested_as_its_region_which_loads() -> None:
    message = error("dev", zone="europe-west4-b")
    assert message.endswith("`pulumi config set --stack dev vertex-training:region europe-west4`")
    # What the suggested command sets is a region the loader takes.
    assert load_config(stack_values("dev", region="europe-west4"), "dev").region == "europe-west4"


@pytest.mark.parametrize(
    ("key", "value", "entry", "shown"),
    [
        ("maxTrials", 8, "maxTrials", "8"),
        ("parallel_trials", 2, "parallelTrials", "2"),
        ("goal", "MINIMIZE", "goal", "MINIMIZE"),
    ],
)
def test_a_study_entry_at_the_top_level_is_pointed_under_tuning(key, value, entry, shown) -> None:
    assert error("dev", **{key: value}) == (
        f"vertex-training:{key}: is not a known key. Fix: {entry} is an entry of the study, "
        f"vertex-training:tuning.{entry}: run `pulumi config rm --stack dev vertex-training:{key}` and "
        f"`pulumi config set --stack dev --path 'vertex-training:tuning.{entry}' {shown}`"
    )


def test_a_study_map_at_the_top_level_is_moved_under_tuning_in_the_stack_file() -> None:
    assert error("dev", parameters={"epochs": {"values": [2, 4]}}).endswith(
        "Fix: parameters is an entry of the study: move it under vertex-training:tuning in Pulumi.dev.yaml "
        "(see docs/tuning.md)"
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


PROJECT_FIX = (
    "run `pulumi config set --stack {stack} vertex-training:gcpProject <your-project-id>` "
    "(`gcloud projects list` shows the ids you can use)"
)
ACCOUNT_FIX = (
    "run `pulumi config set --stack {stack} vertex-training:billingAccount <ACCOUNT_ID>` "
    "(the ACCOUNT_ID column of `gcloud billing accounts list`)"
)
ACCOUNT_PROBLEM = (
    "'012345-6789AB-CDEF01' is an example from this project's stack files and docs, not your billing account"
)


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_the_committed_example_ids_are_refused_at_once_with_both_commands(stack: str) -> None:
    committed = committed_values(stack)
    assert committed["vertex-training:gcpProject"] in placeholders.PROJECTS
    assert committed["vertex-training:billingAccount"] in placeholders.BILLING_ACCOUNTS
    with pytest.raises(ConfigError) as raised:
        load_config(committed, stack)
    project = committed["vertex-training:gcpProject"]
    assert str(raised.value) == (
        f"vertex-training:gcpProject and vertex-training:billingAccount: {project!r} is an example from this "
        f"project's stack files and docs, not your project; {ACCOUNT_PROBLEM}. Fix: "
        f"{PROJECT_FIX.format(stack=stack)} and {ACCOUNT_FIX.format(stack=stack)}"
    )
    assert raised.value.keys == ("gcpProject", "billingAccount")
    real_project = {**committed, "vertex-training:gcpProject": own_ids(stack)["gcpProject"]}
    with pytest.raises(ConfigError) as raised:
        load_config(real_project, stack)
    assert str(raised.value) == (
        f"vertex-training:billingAccount: {ACCOUNT_PROBLEM}. Fix: {ACCOUNT_FIX.format(stack=stack)}"
    )
    assert load_config(stack_values(stack), stack).gcp_project == own_ids(stack)["gcpProject"]


def test_an_error_keeps_its_problem_and_fix_apart_for_those_that_print_them_apart() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(stack_values("dev", billingAccount="012345-6789AB-CDEF01"), "dev")
    error = raised.value
    assert (error.name, error.problem, error.fix) == (
        "vertex-training:billingAccount",
        ACCOUNT_PROBLEM,
        ACCOUNT_FIX.format(stack="dev"),
    )
    assert str(error) == f"{error.name}: {error.problem}. Fix: {error.fix}"


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
    assert str(raised.value).startswith(
        "vertex-training:gcpProject and vertex-training:billingAccount: 'my-training-dev' is an example"
    )
    assert "\n" not in str(raised.value) and "Traceback" not in str(raised.value)
    assert raised.value.__suppress_context__ and raised.value.__cause__ is None
