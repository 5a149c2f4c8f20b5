"""Every problem of a stack file in one run, each with its key and fix: in the program (build after
load_config), in `python -m infra.plan` and in preflight's config loading; accelerator counts refused for
every shape; keys outside the `vertex-training:` namespace named with a did-you-mean."""

from __future__ import annotations

import json

import pytest

from infra.config import ConfigError, ConfigErrors, load_config
from infra.config.reader import problems
from infra.config.stack_file import load_stack
from infra.plan.__main__ import main as plan_main
from infra.preflight.__main__ import check_stack
from infra.preflight.results import MISSING
from infra.vertex.cost.pricing import Catalog
from infra.vertex.custom_job.spec import validate, with_defaults
from tests.fakes.pulumi_mocks import run_program
from tests.plan.conftest import dev_with, write_stack
from tests.stack.conftest import ROOT, own_ids
from tests.vertex.props import job_props, pool

# Three mistakes of different kinds: a misspelt key, a zone for a region, three T4s on an N1 machine.
THREE = {"epoch": 3, "region": "us-central1-a", "acceleratorCount": 3}
THREE_KEYS = ["vertex-training:epoch", "vertex-training:region", "vertex-training:acceleratorCount"]


def three_mistakes() -> dict[str, object]:
    return dev_with(**THREE, **own_ids("dev"))


def test_three_mistakes_in_one_load_each_with_its_fix():
    with pytest.raises(ConfigErrors) as raised:
        load_config(three_mistakes(), "dev")
    found = problems(raised.value)
    assert [error.name for error in found] == THREE_KEYS
    assert all(error.fix for error in found)
    epoch, region, count = found
    assert "did you mean vertex-training:epochs?" in epoch.fix
    assert "us-central1-a" in region.problem
    assert count.problem == "machine type n1-standard-4 takes 1, 2 or 4 NVIDIA_TESLA_T4, not 3"
    message = str(raised.value)
    assert message.startswith("3 problems in the stack configuration:")
    assert message.count("Fix: ") == 3


def test_the_program_stops_before_any_resource_with_every_problem():
    from infra.stack import build

    errors: list[ConfigError] = []

    def program() -> dict:
        try:
            return build(load_config(three_mistakes(), "dev"))
        except ConfigError as error:  # __main__.py raises it as a RunError: its message is every problem
            errors.append(error)
            return {}

    run = run_program(program, stack="dev")
    assert run.resources == []
    assert [error.name for error in problems(errors[0])] == THREE_KEYS


def test_load_stack_and_preflight_name_all_three(tmp_path):
    root = write_stack(tmp_path, "dev", three_mistakes())
    with pytest.raises(ConfigErrors) as raised:
        load_stack("dev", root)
    assert [error.name for error in raised.value.errors] == THREE_KEYS
    project, results = check_stack(root, "dev")
    assert project == "not read"
    assert results[0].item == "credentials"  # who you are comes first, whatever the stack file holds
    results = [r for r in results if r.item == "stack configuration"]
    assert [r.status for r in results] == [MISSING] * 3
    assert [r.detail.split(":")[0] + ":" + r.detail.split(":")[1] for r in results] == THREE_KEYS
    assert all(r.fix for r in results)


def test_plan_prints_all_three_and_fails(tmp_path, capsys):
    root = write_stack(tmp_path, "dev", three_mistakes())
    try:
        assert plan_main(["--stack", "dev"], root=root) == 1
        text = capsys.readouterr().out
        assert text.startswith("Stack dev: 3 problems in its configuration:")
        for key in THREE_KEYS:
            assert f"- {key}: " in text
        assert text.count("  Fix: ") == 3
        assert plan_main(["--stack", "dev", "--json"], root=root) == 1
        plan = json.loads(capsys.readouterr().out)
        assert (plan["project"], plan["jobs"], plan["worst_case_usd"]) == (None, [], None)
        assert [e["key"] for e in plan["errors"]] == THREE_KEYS and all(e["fix"] for e in plan["errors"])
    finally:
        Catalog.forget()


def test_a_default_standing_in_for_a_reported_key_adds_no_problem():
    # acceleratorType none with a count: refused once; the count's default (0) would make the L4 fallback
    # look wrong too, which it is not.
    with pytest.raises(ConfigError) as raised:
        load_config(dev_with(acceleratorType="none", **own_ids("dev")), "dev")
    assert [error.name for error in problems(raised.value)] == ["vertex-training:acceleratorCount"]


@pytest.mark.parametrize(
    ("machine", "gpu", "count", "allowed"),
    [
        ("n1-standard-4", "NVIDIA_TESLA_T4", 3, "1, 2 or 4"),
        ("n1-standard-8", "NVIDIA_TESLA_V100", 3, "1, 2, 4 or 8"),
        ("a2-highgpu-1g", "NVIDIA_TESLA_A100", 2, "exactly 1"),
        ("g2-standard-4", "NVIDIA_L4", 2, "exactly 1"),
        ("g2-standard-24", "NVIDIA_L4", 1, "exactly 2"),
    ],
)
def test_the_job_shape_takes_only_the_counts_its_machine_type_takes(machine, gpu, count, allowed):
    values = dev_with(
        machineType=machine, acceleratorType=gpu, acceleratorCount=count, fallbacks=None, **own_ids("dev")
    )
    with pytest.raises(ConfigError) as raised:
        load_config(values, "dev")
    (error,) = problems(raised.value)
    assert error.name == "vertex-training:acceleratorCount"
    assert error.problem == f"machine type {machine} takes {allowed} {gpu}, not {count}"
    assert "acceleratorCount" in error.fix


def test_every_fallback_is_checked_for_its_count_in_one_run():
    fallbacks = [
        {"machineType": "a2-highgpu-1g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 2},
        {"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 2},
        {"schedulingStrategy": "STANDARD"},  # the job's own shape on demand: fine
        {"machineType": "n1-standard-8", "acceleratorCount": 3},
    ]
    with pytest.raises(ConfigErrors) as raised:
        load_config(dev_with(fallbacks=fallbacks, **own_ids("dev")), "dev")
    found = [(error.name, error.problem) for error in problems(raised.value)]
    assert found == [
        (
            "vertex-training:fallbacks[0]",
            "machine type a2-highgpu-1g takes exactly 1 NVIDIA_TESLA_A100, not 2",
        ),
        ("vertex-training:fallbacks[1]", "machine type g2-standard-4 takes exactly 1 NVIDIA_L4, not 2"),
        ("vertex-training:fallbacks[3]", "machine type n1-standard-8 takes 1, 2 or 4 NVIDIA_TESLA_T4, not 3"),
    ]


def test_a_fallback_that_inherits_a_count_its_machine_cannot_take_is_refused():
    # Two T4s on N1 are fine; the dev file's first fallback, g2-standard-4 with L4, inherits the count 2.
    with pytest.raises(ConfigError) as raised:
        load_config(dev_with(acceleratorCount=2, **own_ids("dev")), "dev")
    (error,) = problems(raised.value)
    assert (error.name, error.problem) == (
        "vertex-training:fallbacks[0]",
        "machine type g2-standard-4 takes exactly 1 NVIDIA_L4, not 2",
    )


def test_the_providers_check_uses_the_same_counts():
    primary = job_props(worker_pools=[pool(machine_type="n1-standard-4", accelerator_count=3)])
    assert validate(with_defaults(primary)) == [
        (
            "worker_pools[0].accelerator_count",
            "machine type n1-standard-4 takes 1, 2 or 4 NVIDIA_TESLA_T4, not 3",
        )
    ]
    l4 = {"machine_type": "g2-standard-4", "accelerator_type": "NVIDIA_L4"}
    fallbacks = job_props(fallbacks=[{**l4, "accelerator_count": 2}, l4])
    assert validate(with_defaults(fallbacks)) == [
        ("fallbacks[0].accelerator_count", "machine type g2-standard-4 takes exactly 1 NVIDIA_L4, not 2")
    ]


def test_keys_outside_the_namespace_are_named_with_a_did_you_mean():
    values = {
        **dev_with(**own_ids("dev")),
        "epochs": 4,  # no namespace
        "vertex_training:batchSize": 16,  # misspelt namespace
        "vertex-trainng:gpus": 2,  # misspelt namespace and an alias
        "gcp:project": "someone-elses",  # another program's namespace: left alone
    }
    with pytest.raises(ConfigErrors) as raised:
        load_config(values, "dev")
    found = {error.problem: error.fix for error in problems(raised.value)}
    assert found == {
        "key 'epochs' has no namespace, so nothing reads it": (
            "did you mean vertex-training:epochs? rename epochs to vertex-training:epochs in Pulumi.dev.yaml"
        ),
        "key 'vertex_training:batchSize' is in namespace 'vertex_training', which nothing reads": (
            "did you mean vertex-training:batchSize? rename vertex_training:batchSize to "
            "vertex-training:batchSize in Pulumi.dev.yaml"
        ),
        "key 'vertex-trainng:gpus' is in namespace 'vertex-trainng', which nothing reads": (
            "did you mean vertex-training:acceleratorCount? rename vertex-trainng:gpus to "
            "vertex-training:acceleratorCount in Pulumi.dev.yaml"
        ),
    }


def test_the_sample_docs_stack_md_shows_is_what_plan_prints(tmp_path, capsys):
    root = write_stack(tmp_path, "dev", three_mistakes())
    try:
        assert plan_main(["--stack", "dev"], root=root) == 1
    finally:
        Catalog.forget()
    printed = capsys.readouterr().out.strip()
    docs = (ROOT / "docs" / "stack.md").read_text()
    start = docs.index("```text\nStack dev: 3 problems") + len("```text\n")
    assert docs[start : docs.index("\n```", start)] == printed
