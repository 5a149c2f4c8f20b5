"""Cost keys in the stack: maxCostUsd reaches each job, budgetCredits the budget; worst cases are exported."""

from __future__ import annotations

import pytest

from infra.components.budget import CREDIT_TYPES_TREATMENT
from infra.config import ConfigError
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from tests.stack.conftest import cached_run, run_stack, stack_config


@pytest.mark.parametrize(
    ("overrides", "key", "words"),
    [
        ({"maxCostUsd": 0}, "maxCostUsd", "greater than 0"),
        ({"maxCostUsd": "lots"}, "maxCostUsd", "number"),
        ({"budgetCredits": "some"}, "budgetCredits", "exclude, include"),
        ({"maxHourlyUsd": -2}, "maxHourlyUsd", "positive number"),
        ({"maxHourlyUsd": "cheap"}, "maxHourlyUsd", "number"),
        ({"allowUnpricedShapes": "maybe"}, "allowUnpricedShapes", "true or false"),
        (
            {"fallbacks": [{"acceleratorType": "NVIDIA_TESLA_V100", "maxHourlyUsd": 0}]},
            "fallbacks[0].maxHourlyUsd",
            "positive number",
        ),
    ],
)
def test_bad_cost_values_name_their_key(overrides, key, words) -> None:
    with pytest.raises(ConfigError, match=words) as raised:
        stack_config("dev", **overrides)
    assert raised.value.key == key


def test_defaults_count_spend_before_credits_and_set_no_cap() -> None:
    cfg = stack_config("dev", budgetCredits=None, maxCostUsd=None)
    assert cfg.budget.credits == "exclude" and cfg.cost.max_cost_usd is None


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_job_carries_the_cap_and_the_budget_its_credit_treatment(stack: str) -> None:
    cfg, run = stack_config(stack), cached_run(stack)
    jobs = [r.inputs for r in run.resources if r.type == RESOURCE_TYPE]
    assert len(jobs) == 2 and all(job["max_cost_usd"] == cfg.cost.max_cost_usd for job in jobs)
    budget = run.one("gcp:billing/budget:Budget").inputs
    assert budget["budgetFilter"]["creditTypesTreatment"] == "EXCLUDE_ALL_CREDITS"


def test_bad_limit_values_say_the_command_that_fixes_them() -> None:
    with pytest.raises(ConfigError) as raised:
        stack_config("dev", maxHourlyUsd=0)
    assert raised.value.fix == "run `pulumi config set --stack dev vertex-training:maxHourlyUsd 2`"
    with pytest.raises(ConfigError) as raised:
        stack_config("dev", fallbacks=[{"acceleratorType": "NVIDIA_TESLA_V100", "maxHourlyUsd": -1}])
    assert raised.value.fix == (
        "run `pulumi config set --stack dev --path 'vertex-training:fallbacks[0].maxHourlyUsd' 2`"
    )


def test_the_limits_reach_every_job_and_stay_out_when_unset() -> None:
    fallbacks = [{"acceleratorType": "NVIDIA_TESLA_V100", "maxHourlyUsd": 4}]
    run = run_stack("dev", maxHourlyUsd=1.5, allowUnpricedShapes=True, fallbacks=fallbacks)
    jobs = {r.name: r.inputs for r in run.resources if r.type == RESOURCE_TYPE}
    assert all(job["max_hourly_usd"] == 1.5 and job["allow_unpriced_shapes"] is True for job in jobs.values())
    assert jobs["train"]["fallbacks"] == [{"accelerator_type": "NVIDIA_TESLA_V100", "max_hourly_usd": 4}]
    # The committed stacks set neither: their jobs' inputs are what earlier versions stored (no update).
    for job in (r.inputs for r in cached_run("dev").resources if r.type == RESOURCE_TYPE):
        assert "max_hourly_usd" not in job and "allow_unpriced_shapes" not in job


def test_include_nets_credits_out() -> None:
    budget = run_stack("dev", budgetCredits="include").one("gcp:billing/budget:Budget").inputs
    assert budget["budgetFilter"]["creditTypesTreatment"] == CREDIT_TYPES_TREATMENT["include"]


def test_prod_exports_each_jobs_worst_case_at_list_prices() -> None:
    outputs = run_stack("prod", fallbacks=None, maxWaitSeconds=None, fallbackRegions=None).outputs
    # Chief + 1 worker, each n1-standard-16 + 2 x T4, for 3 hours, at the cited on-demand table's prices.
    assert outputs["train_worst_case_usd"] == pytest.approx(round(2 * (0.873996 + 2 * 0.4025) * 3, 2))
    assert outputs["data_worst_case_usd"] == pytest.approx(round(0.436998 * 3, 2))  # n1-standard-8
    # prod's fallback chain includes g2 + L4 and us-east1, with no sourced price: under maxCostUsd those
    # shapes are skipped (cost/limits.py), so the worst case is the dearest priced shape, the V100 pair.
    assert cached_run("prod").outputs["train_worst_case_usd"] == pytest.approx(
        round(2 * (0.873996 + 2 * 2.852) * 3, 2)
    )
    # dev's Spot T4 counts at its on-demand bound; its unpriced g2 + L4 fallback is skipped under the cap.
    assert cached_run("dev").outputs["train_worst_case_usd"] == pytest.approx(round(0.218499 + 0.4025, 2))
    # With allowUnpricedShapes the L4 stays in the chain: no worst case rather than a guess.
    assert run_stack("dev", allowUnpricedShapes=True).outputs["train_worst_case_usd"] is None
    assert run_stack("dev", fallbacks=None).outputs["train_worst_case_usd"] == pytest.approx(
        round(0.218499 + 0.4025, 2)  # n1-standard-4 + T4 on demand for 1 hour: the bound of the Spot shape
    )
