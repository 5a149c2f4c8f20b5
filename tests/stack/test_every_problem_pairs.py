"""Every problem at once, proven over pairs: each pair of mistakes in keys whose checks do not read each other
is reported as two problems, each naming its key (no first problem hides the second)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from infra.config import ConfigError, load_config
from infra.config.reader import problems
from tests.stack.conftest import stack_values

NS = "vertex-training"
RESERVATION = {"type": "SPECIFIC_RESERVATION", "reservation": "projects/p/zones/us-central1-a/reservations/r"}
# key named -> the values that make its mistake (a GPU fit is a mistake of two keys, named at machineType).
MISTAKES: dict[str, dict[str, Any]] = {
    "machineType": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_A100"},
    "budgetAmount": {"budgetAmount": -1},
    "trainerDir": {"trainerDir": "examples/nosuch"},
    "checkpointMinutes": {"checkpointMinutes": 0},
    "region": {"region": "us-central"},
    "reservationAffinity": {"reservationAffinity": RESERVATION, "spot": True},
    "timeoutSeconds": {"timeoutSeconds": "an hour"},
    "imageSize": {"imageSize": 0},
    "experiment": {"experiment": "Dev"},
    "budgetEmails": {"budgetEmails": ["not-an-address"]},
}
# The local stack: its images folder is checked too.
LOCAL_MISTAKES: dict[str, dict[str, Any]] = {
    "machineType": MISTAKES["machineType"],
    "checkpointMinutes": MISTAKES["checkpointMinutes"],
    "trainerCommand": {"trainerCommand": "python -m mytrainer.task"},
    "batchPrediction.images": {"batchPrediction": {"images": "no/such/folder"}},
    "imageSize": MISTAKES["imageSize"],
}


def named(stack: str, overrides: dict[str, Any]) -> set[str]:
    values = stack_values(stack)
    values.update({f"{NS}:{key}": value for key, value in overrides.items()})
    with pytest.raises(ConfigError) as raised:
        load_config(values, stack)
    return {key for problem in problems(raised.value) for key in problem.keys}


def _pairs(mistakes: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    return list(itertools.combinations(mistakes, 2))


# Pairs whose checks do read each other: the reservation is checked on the job's machine (a default standing
# in for a refused machine type could be what refuses it), so only the first is promised.
DEPENDENT = {("machineType", "reservationAffinity")}


@pytest.mark.parametrize(("first", "second"), _pairs(MISTAKES), ids=lambda key: key)
def test_two_mistakes_of_a_cloud_stack_are_both_named(first: str, second: str) -> None:
    keys = named("dev", {**MISTAKES[first], **MISTAKES[second]})
    assert ({first} if (first, second) in DEPENDENT else {first, second}) <= keys, keys


@pytest.mark.parametrize(("first", "second"), _pairs(LOCAL_MISTAKES), ids=lambda key: key)
def test_two_mistakes_of_the_local_stack_are_both_named(first: str, second: str) -> None:
    keys = named("local", {**LOCAL_MISTAKES[first], **LOCAL_MISTAKES[second]})
    assert {first, second} <= keys, keys


def test_each_mistake_alone_is_named() -> None:
    """The pairs above prove something only if each mistake is refused on its own."""
    for key, overrides in MISTAKES.items():
        assert key in named("dev", overrides)
    for key, overrides in LOCAL_MISTAKES.items():
        assert key in named("local", overrides)
