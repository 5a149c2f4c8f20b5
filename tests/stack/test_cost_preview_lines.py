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
    # g2 and L4 have no sourced price: the line says so instead of a figure.
    assert lines[1].startswith("cost of fallback 1: 1 x g2-standard-24 + 2 x NVIDIA_L4")
    assert "no price for g2-standard-24 (us-central1, STANDARD), NVIDIA_L4" in lines[1]
    # Chief and worker, each n1-standard-16 + 2 x V100, at the cited on-demand table.
    assert lines[2].startswith("cost of fallback 2: 1 x n1-standard-16 + 2 x NVIDIA_TESLA_V100")
    assert lines[2].endswith("(STANDARD): USD 13.16/h, USD 39.47 for timeout_seconds 10800")
    # No worst case line (a shape has no price); the WARNING names the shapes the cap does not count.
    assert not any(line.startswith("worst case") for line in lines)
    assert lines[-1].startswith(
        "WARNING: max_cost_usd USD 15.00 is not enforced while the job runs on fallback 1, fallback 3: "
        "no price"
    )


def test_prod_without_fallbacks_shows_its_worst_case_under_the_cap(capsys) -> None:
    (inputs,) = [
        r.inputs
        for r in run_stack("prod", fallbacks=None, maxWaitSeconds=None).resources
        if r.type == RESOURCE_TYPE and r.name == "train"
    ]
    capsys.readouterr()
    assert CustomJobProvider().check({}, dict(inputs)).failures == []
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith("worst case USD 10.07 (list prices, all attempts); max_cost_usd USD 15.00")
    )


def test_dev_on_spot_names_the_unpriced_items_and_the_shapes_the_cap_does_not_count(capsys) -> None:
    lines = preview("dev", "train", capsys)
    assert lines[0] == (
        "cost of shape: 1 x n1-standard-4 + 1 x NVIDIA_TESLA_T4 (SPOT): no price for n1-standard-4 "
        "(us-central1, SPOT), NVIDIA_TESLA_T4 (us-central1, SPOT), so no estimate"
    )
    assert lines[-1].startswith(
        "WARNING: max_cost_usd USD 5.00 is not enforced while the job runs on shape, fallback 1: no price"
    )
