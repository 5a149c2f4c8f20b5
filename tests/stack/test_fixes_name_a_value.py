"""Every fix names a value or a command: the nearest regions for a misspelt one, the machine types that take a
GPU, a YAML error's own line and column with the line shown, the value the stack already has, a number
converted from the user's own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.config import ConfigError, load_config
from infra.config.reader import problems
from infra.config.stack_file import load_stack
from tests.stack.conftest import ROOT, stack_values


def fix_of(key: str, stack: str = "dev", **overrides: object) -> str:
    with pytest.raises(ConfigError) as raised:
        load_config(stack_values(stack, **overrides), stack)
    (found,) = [p for p in problems(raised.value) if key in p.keys]
    return found.fix


def test_a_misspelt_region_gets_the_nearest_regions() -> None:
    assert fix_of("region", region="us-central") == (
        "run `pulumi config set --stack dev vertex-training:region us-central1`"
    )
    fix = fix_of("region", region="europe-west")
    assert fix.startswith("run `pulumi config set --stack dev vertex-training:region europe-west1`"), fix
    assert "europe-west2" in fix and "europe-west4" in fix
    assert "gcloud ai locations list" in fix_of("region", region="Q")


def test_a_gpu_on_a_machine_that_cannot_take_it_names_the_machine_types_that_can() -> None:
    fix = fix_of("machineType", machineType="n1-standard-8", acceleratorType="NVIDIA_TESLA_A100")
    assert fix == (
        "run `pulumi config set --stack dev vertex-training:machineType a2-highgpu-1g` (machine types that "
        "take 1 x NVIDIA_TESLA_A100: a2-highgpu-1g, a2-ultragpu-1g)"
    )


def test_a_yaml_slip_names_its_own_line_and_column_and_shows_it(tmp_path: Path) -> None:
    lines = (ROOT / "Pulumi.dev.yaml").read_text().splitlines()
    slipped = next(i for i, line in enumerate(lines) if line.startswith("  vertex-training:region"))
    lines[slipped] = " " + lines[slipped].lstrip()  # one space short, well below `config:`
    (tmp_path / "Pulumi.dev.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as raised:
        load_stack("dev", tmp_path)
    number = slipped + 1
    assert f"is not valid YAML: line {number}, column 2: " in raised.value.problem
    assert raised.value.problem.endswith(f"    {number} | {lines[slipped]}")
    assert "config:" not in raised.value.problem  # not the block it is in, 20 lines up
    assert raised.value.fix == f"indent line {number} as the line before it: `  {lines[slipped].lstrip()}`"


def test_a_refused_value_under_a_misspelt_key_points_at_the_stacks_own_value() -> None:
    fix = fix_of("budgetUsd", budgetUsd=-5)
    assert "the stack's budgetAmount is 25" in fix and "50" not in fix
    assert fix.endswith("run `pulumi config rm --stack dev vertex-training:budgetUsd`")


@pytest.mark.parametrize(
    ("key", "words", "number"),
    [
        ("timeoutSeconds", "an hour", "3600"),
        ("timeoutSeconds", "90 min", "5400"),
        ("queueTimeoutSeconds", "2 hours", "7200"),
        ("checkpointMinutes", "half an hour", "30"),
        ("budgetAmount", "$25", "25"),
        ("budgetAmount", "25 USD", "25"),
        ("epochs", "ten", "10"),
    ],
)
def test_a_number_in_words_is_converted_in_the_fix(key: str, words: str, number: str) -> None:
    fix = fix_of(key, **{key: words})
    assert (
        fix == f"run `pulumi config set --stack dev vertex-training:{key} {number}` ({words!r} as a number)"
    )


def test_words_that_are_no_number_get_the_example() -> None:
    assert fix_of("timeoutSeconds", timeoutSeconds="soon") == (
        "run `pulumi config set --stack dev vertex-training:timeoutSeconds 7200`"
    )
