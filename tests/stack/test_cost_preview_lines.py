"""The cost lines `pulumi preview` shows for the committed dev and prod stacks (check on their job props)."""

from __future__ import annotations

import pytest

from infra.vertex.custom_job.resource import RESOURCE_TYPE
from infra.vertex.provider import CustomJobProvider
from tests.stack.conftest import cached_run, run_stack


def preview(stack: str, job: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    (inputs,) = [r.inputs for r in cached_run(stack).resources if r.type == RESOURCE_TYPE and r.name == job]
    capsys.readouterr()
    assert CustomJobProvider().check({}, dict(inputs)).failures == []
    return [
        line.split("] ", 1)[1] for line in capsys.readouterr().err.splitlines() if line.startswith("[vertex")
    ]


def test_prod_training_prices_each_shape_and_names_the_unpriced_fallback(capsys) -> None:
    lines = preview("prod", "train", capsys)
    assert lines[0] == (
        "cost of shape: 1 x n1-standard-16 + 2 x NVIDIA_TESLA_T4, 1 x n1-standard-16 + 2 x NVIDIA_TESLA_T4 "
        "(STANDARD): USD 3.36/h, USD 10.07 for timeout_seconds 10800"
    )
    # g2 and L4 have no sourced price: under maxCostUsd the shape is skipped, and the line says why.
    assert lines[1].startswith("cost of fallback 1: 1 x g2-standard-24 + 2 x NVIDIA_L4")
    assert (
        "skipped (maxCostUsd): no sourced price for g2-standard-24 (us-central1, STANDARD), NVIDIA_L4"
        in lines[1]
    )
    # Chief and worker, each n1-standard-16 + 2 x V100, at the cited on-demand table.
    assert lines[2].startswith("cost of fallback 2: 1 x n1-standard-16 + 2 x NVIDIA_TESLA_V100")
    assert lines[2].endswith("(STANDARD): USD 13.16/h, USD 39.47 for timeout_seconds 10800")
    # The chain again in prod's fallback region, each shape priced (or not) in us-east1.
    assert lines[4].startswith("cost of shape in us-east1: 1 x n1-standard-16 + 2 x NVIDIA_TESLA_T4")
    assert "skipped (maxCostUsd): no sourced price for n1-standard-16 (us-east1, STANDARD)" in lines[4]
    assert lines[7].startswith("cost of fallback 3 in us-east1: 1 x g2-standard-24 + 2 x NVIDIA_L4")
    # The worst case counts the shapes the job may run on (the V100 pair the dearest); nothing is uncounted.
    assert "worst case USD 39.47 (list prices, all attempts); max_cost_usd USD 15.00" in lines
    assert not any("is not enforced" in line for line in lines)
    # Across regions: the data is read from the bucket in us-central1 at a cited rate, and no TensorBoard.
    assert (
        "in us-east1: training data is read across regions from the bucket in us-central1, billed at "
        "USD 0.02/GiB (Cloud Storage pricing, https://cloud.google.com/storage/pricing#network-buckets, read "
        "2026-11-25)" in lines
    )
    assert any(line.startswith("in us-east1: the job runs without the TensorBoard link") for line in lines)
    # T4's regions were not read from Vertex's Locations page: no verdict, a warning per region.
    assert [line.split(" is not in")[0] for line in lines if line.startswith("WARNING: whether")] == [
        "WARNING: whether Vertex AI offers NVIDIA_TESLA_T4 for training in us-central1",
        "WARNING: whether Vertex AI offers NVIDIA_TESLA_T4 for training in us-east1",
    ]


def test_prod_without_fallbacks_shows_its_worst_case_under_the_cap(capsys) -> None:
    (inputs,) = [
        r.inputs
        for r in run_stack("prod", fallbacks=None, maxWaitSeconds=None, fallbackRegions=None).resources
        if r.type == RESOURCE_TYPE and r.name == "train"
    ]
    capsys.readouterr()
    assert CustomJobProvider().check({}, dict(inputs)).failures == []
    lines = capsys.readouterr().err.splitlines()
    assert any(
        line.endswith("worst case USD 10.07 (list prices, all attempts); max_cost_usd USD 15.00")
        for line in lines
    )


def test_dev_on_spot_is_capped_at_the_on_demand_bound_and_names_the_unpriced_fallback(capsys) -> None:
    lines = preview("dev", "train", capsys)
    assert lines[0] == (
        "cost of shape: 1 x n1-standard-4 + 1 x NVIDIA_TESLA_T4 (SPOT): at most USD 0.62/h (on-demand price; "
        "Spot is billed below it, https://cloud.google.com/compute/docs/instances/spot#pricing, "
        "read 2026-11-25), at most "
        "USD 0.62 for timeout_seconds 3600"
    )
    assert lines[1].startswith(
        "cost of fallback 1: 1 x g2-standard-4 + 1 x NVIDIA_L4 (SPOT): skipped (maxCostUsd)"
    )
    assert lines[3].startswith("worst case USD 0.62 (list prices, on-demand for Spot/FLEX_START")
    assert not any("is not enforced" in line for line in lines)
