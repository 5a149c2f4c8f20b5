"""Throughput in every run: images/s and input wait per epoch, in the epoch line and metrics.json; a run
whose input is slowed on purpose is reported input-bound, a normal one is not."""

from __future__ import annotations

import json
import re

import pytest

from tests.trainer.helpers import epoch_lines
from trainer import throughput

# The shared `trained` run (conftest.py): 3 head epochs and 1 fine-tuning epoch, SIGKILLed once head epoch 2
# is checkpointed and resumed; metrics.json is the resumed process's: head epoch 3, then fine-tuning.
EPOCHS = {"head": 1, "fine_tune": 1}


# Function-scoped: they only read the shared runs (a module-scoped fixture on a shared model is taken for one
# that trains again from it: tests/tensorflow_rule.py).
@pytest.fixture
def normal(trained: dict) -> dict:
    """The resumed process of the shared run: its log (after the killed one's) and its metrics.json."""
    resumed = trained["log"][len(trained["first"]) :]
    return {"log": resumed, "rc": trained["rc"], "model_dir": trained["model_dir"]}


@pytest.fixture
def slowed(interrupted_runs: dict) -> dict:
    """The last run of conftest.py's interrupted_runs: the rest of one epoch with its input slowed."""
    r = interrupted_runs
    return {"log": r["third"], "rc": r["third_rc"], "model_dir": r["model_dir"]}


@pytest.mark.slow
def test_metrics_json_has_throughput_per_epoch_per_phase(normal: dict) -> None:
    assert normal["rc"] == 0, normal["log"][-3000:]
    metrics = json.loads((normal["model_dir"] / "metrics.json").read_text())
    found = metrics["throughput"]
    assert set(found) == {"head", "fine_tune"}
    for phase, epochs in EPOCHS.items():
        assert set(found[phase]) == {"images_per_second", "input_wait_fraction"}
        assert len(found[phase]["images_per_second"]) == epochs == len(found[phase]["input_wait_fraction"])
        assert all(rate > 0 for rate in found[phase]["images_per_second"])
        assert all(0 <= share <= 1 for share in found[phase]["input_wait_fraction"])
        # The epoch line shows the same figures as metrics.json.
        lines = epoch_lines(normal["log"], phase)
        for line, rate in zip(lines, found[phase]["images_per_second"], strict=True):
            shown = re.search(r", ([0-9.]+) images/s, input wait [0-9]+%\)$", line)
            assert shown and float(shown[1]) == pytest.approx(rate, abs=0.051), line


@pytest.mark.slow
def test_a_normal_run_is_not_input_bound(normal: dict) -> None:
    assert normal["rc"] == 0, normal["log"][-3000:]
    shares = json.loads((normal["model_dir"] / "metrics.json").read_text())["throughput"]
    assert max(s for phase in shares.values() for s in phase["input_wait_fraction"]) < (
        throughput.INPUT_BOUND_FRACTION
    ), normal["log"][-3000:]
    assert "input-bound" not in normal["log"]


@pytest.mark.slow
def test_a_run_with_slow_input_is_reported_input_bound_with_fixes(slowed: dict) -> None:
    assert slowed["rc"] == 0, slowed["log"][-3000:]
    metrics = json.loads((slowed["model_dir"] / "metrics.json").read_text())
    shares = [s for phase in metrics["throughput"].values() for s in phase["input_wait_fraction"]]
    assert len(shares) == 1
    assert min(shares) > throughput.INPUT_BOUND_FRACTION
    warnings = [line for line in slowed["log"].splitlines() if "input-bound" in line]
    assert len(warnings) == 1, slowed["log"][-3000:]
    assert "machineType" in warnings[0] and "imageSize" in warnings[0]


def test_epoch_figures() -> None:
    figures = throughput.epoch_throughput(images=320, seconds=4.0, wait_seconds=1.0)
    assert figures.images_per_second == 80.0 and figures.input_wait_fraction == 0.25
    assert figures.input_bound
    assert not throughput.epoch_throughput(320, 4.0, 0.4).input_bound
    assert throughput.epoch_throughput(0, 0.0, 0.0).images_per_second == 0.0
