"""Every shape's machine type is one the machine facts know, and every shape's problem is listed."""

from __future__ import annotations

import pytest

from infra.config import ConfigError, load_config, shapes
from infra.config.reader import problems
from infra.preflight.run import offline
from infra.vertex.capacity import machines
from tests.stack.conftest import stack_config, stack_values


def found(stack: str, **overrides: object) -> list[ConfigError]:
    with pytest.raises(ConfigError) as raised:
        load_config(stack_values(stack, **overrides), stack)
    return list(problems(raised.value))


@pytest.mark.parametrize(
    ("overrides", "key", "right"),
    [
        ({"machineType": "n1-standrd-4"}, "machineType", "n1-standard-4"),
        ({"dataMachineType": "e2-standrd-8"}, "dataMachineType", "e2-standard-8"),
        (
            {"fallbacks": [{"machineType": "g2-standrd-4", "acceleratorType": "NVIDIA_L4"}]},
            "fallbacks[0].machineType",
            "g2-standard-4",
        ),
        (
            {"batchPrediction": {"images": "gs://b/i", "machineType": "n1-hignmem-8"}},
            "batchPrediction.machineType",
            "n1-highmem-8",
        ),
        (
            {"batchPrediction": {"images": "gs://b/i", "fallbacks": [{"machineType": "n1-standad-4"}]}},
            "batchPrediction.fallbacks[0].machineType",
            "n1-standard-4",
        ),
    ],
)
def test_a_misspelt_machine_type_in_any_shape_is_a_problem_with_its_family_and_the_fix(
    overrides: dict, key: str, right: str
) -> None:
    (problem,) = [p for p in found("dev", **overrides) if p.key == key]
    family = right.split("-", 1)[0]
    assert f"is not one of the {family} machine types" in problem.problem
    assert all(name in problem.problem for name in machines.MACHINE_TYPES[family])
    quoted = f"'vertex-training:{key}'" if "[" in key else f"vertex-training:{key}"
    path = " --path" if "." in key or "[" in key else ""
    assert problem.fix == f"did you mean {right}? run `pulumi config set --stack dev{path} {quoted} {right}`"


def test_the_study_runs_on_the_training_shape_so_its_typo_is_the_training_jobs() -> None:
    study = {
        "metric": "val_accuracy",
        "maxTrials": 2,
        "parameters": {"learningRate": {"values": [0.1, 0.01]}},
    }
    keys = [p.key for p in found("dev", machineType="n1-standrd-4", tuning=study)]
    assert keys == ["machineType"]


@pytest.mark.parametrize("typo", ["n1-zzzz-3", "n1-standard-5"])
def test_nothing_close_or_a_tie_gets_no_suggestion_only_the_list(typo: str) -> None:
    (problem,) = found("dev", machineType=typo)
    assert "did you mean" not in problem.fix and "pulumi config set" not in problem.fix


def test_a_family_the_facts_lack_is_a_warning_in_plan_and_preflight_not_an_error() -> None:
    cfg = stack_config("dev", dataMachineType="n2-standard-8")
    (warning,) = shapes.config_warnings(cfg)
    assert "dataMachineType n2-standard-8: the n2 family is not in this project's machine facts" in warning
    notes = [r for r in offline(cfg) if r.item == "machine types"]
    assert [r.detail for r in notes] == [warning]
    assert not shapes.config_warnings(stack_config("dev"))


def test_a_not_well_formed_type_of_no_known_family_is_a_problem() -> None:
    (problem,) = found("dev", dataMachineType="bigbox-9")
    assert "is not a machine type (<family>-<kind>-<size>" in problem.problem


def test_the_tables_agree_with_the_sources_cited() -> None:
    """N1 1..96 (standard), 2..96 (highmem, highcpu); E2 at most 128 GB (no e2-highmem-32)."""
    assert "n1-standard-1" in machines.KNOWN_MACHINE_TYPES
    assert "n1-highmem-1" not in machines.KNOWN_MACHINE_TYPES
    assert "e2-highmem-16" in machines.KNOWN_MACHINE_TYPES
    assert "e2-highmem-32" not in machines.KNOWN_MACHINE_TYPES
    assert set(machines.GPUS_ATTACHED) <= machines.KNOWN_MACHINE_TYPES


def test_a_bad_fallback_gpu_is_listed_when_the_primary_count_and_region_are_bad_too() -> None:
    """Issue 42: 9 problems injected, 8 listed; the fallback's GPU was hidden behind the primary's."""
    problems_found = found(
        "dev",
        acceleratorCount=0,
        region="us-central1-a",
        fallbacks=[
            {"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_L5"},
            {"machineType": "n1-standard-4", "acceleratorType": "NVIDIA_L4"},
            {"machineType": "n1-standrd-4", "acceleratorType": "NVIDIA_TESLA_T4"},
        ],
        dataMachineType="n1-standard-5",
    )
    keys = [p.key for p in problems_found]
    assert "acceleratorCount" in keys and "region" in keys
    assert "fallbacks[0]" in keys and "unknown accelerator_type 'NVIDIA_L5'" in str(
        problems_found[keys.index("fallbacks[0]")]
    )
    assert "fallbacks[1]" in keys and "cannot take NVIDIA_L4" in str(
        problems_found[keys.index("fallbacks[1]")]
    )
    assert "fallbacks[2].machineType" in keys and "dataMachineType" in keys
    assert len(keys) == len(set(keys)), keys  # each once


def test_the_study_and_batch_shapes_are_checked_when_the_primary_count_and_region_are_bad() -> None:
    study = {"metric": "val_accuracy", "maxTrials": 2, "parallelTrials": 5}
    study["parameters"] = {"learningRate": {"values": [0.1, 0.01]}}
    batch = {"images": "gs://b/i", "machineType": "n1-standard-4", "acceleratorType": "NVIDIA_TESLA_T9"}
    keys = [
        p.key
        for p in found(
            "dev",
            acceleratorCount=0,
            region="us-central1-a",
            tuning=study,
            batchPrediction={**batch, "acceleratorCount": 1},
        )
    ]
    assert {"region", "acceleratorCount", "tuning", "batchPrediction.acceleratorType"} <= set(keys), keys
