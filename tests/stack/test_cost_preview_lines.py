"""The cost lines `pulumi preview` shows for the committed dev and prod stacks (check on their job props)."""

from __future__ import annotations

import pytest

from infra.vertex.provider import CustomJobProvider
from infra.vertex.resource import RESOURCE_TYPE
from tests.stack.conftest import cached_run


def preview(stack: str, job: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    (inputs,) = [r.inputs for r in cached_run(stack).resources if r.type == RESOURCE_TYPE and r.name == job]
    capsys.readouterr()
    assert CustomJobProvider().check({}, dict(inputs)).failures == []
    return [
        line.split("] ", 1)[1] for line in capsys.readouterr().err.splitlines() if line.startswith("[vertex")
    ]


def test_prod_training_shows_its_hourly_price_and_worst_case_under_the_cap(capsys) -> None:
    assert preview("prod", "train", capsys) == [
        "cost of shape: 1 x n1-standard-16 + 2 x NVIDIA_TESLA_T4, 1 x n1-standard-16 + 2 x NVIDIA_TESLA_T4 "
        "(STANDARD): USD 3.36/h, USD 10.07 for timeout_seconds 10800",
        "worst case USD 10.07 (list prices, all attempts); max_cost_usd USD 15.00",
    ]


def test_dev_on_spot_names_the_unpriced_items_and_says_the_cap_cannot_be_enforced(capsys) -> None:
    lines = preview("dev", "train", capsys)
    assert lines[0] == (
        "cost of shape: 1 x n1-standard-4 + 1 x NVIDIA_TESLA_T4 (SPOT): no price for n1-standard-4 "
        "(us-central1, SPOT), NVIDIA_TESLA_T4 (us-central1, SPOT), so no estimate"
    )
    assert lines[1].startswith("WARNING: max_cost_usd USD 5.00 cannot be enforced")
