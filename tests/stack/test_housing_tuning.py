"""A study of a trainer of your own through the local stack's real path: config `tuning` -> stack -> the
registered HyperparameterTuningJob -> provider -> local runner -> examples/housing/ processes, tuned through
the flags its trainerArgs pass and on the metric it reports itself (val_mae)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.stack import build
from infra.vertex.tuning.resource import RESOURCE_TYPE as TUNING_JOB
from infra.vertex.tuning_provider import TuningJobProvider
from tests.fakes.pulumi_mocks import run_program
from tests.stack.conftest import stack_config

pytestmark = pytest.mark.slow

STUDY = {
    "metric": "val_mae",
    "goal": "MINIMIZE",
    "algorithm": "grid",
    "maxTrials": 2,
    "parallelTrials": 2,
    "parameters": {"learningRate": {"values": [0.1, 0.001]}},
}
ARGS = ["--rows", "120", "--epochs", "{epochs}", "--batch-size", "{batch_size}"]


def test_a_local_study_of_the_housing_example_minimizes_its_own_metric(tmp_path: Path) -> None:
    args = [*ARGS, "--learning-rate", "{learning_rate}"]
    cfg = stack_config("housing", localDir=str(tmp_path), tuning=STUDY, trainerArgs=args, epochs=2)
    run = run_program(lambda: build(cfg), stack="housing")
    (tune,) = run.by_type(TUNING_JOB)
    props = {**{k: v for k, v in tune.inputs.items() if k != "__provider"}, "poll_interval_seconds": 0.2}
    provider = TuningJobProvider()
    checked = provider.check({}, props)
    assert checked.failures == []
    outs = provider.create(checked.inputs).outs

    assert outs["state"] == "JOB_STATE_SUCCEEDED", outs.get("error")
    assert [t["state"] for t in outs["trials"]] == ["SUCCEEDED"] * 2
    for trial in outs["trials"]:
        trial_dir = Path(props["base_output_dir"]) / trial["id"]
        exported = json.loads((trial_dir / "model" / "metrics.json").read_text())
        # Its last report (the last epoch) is the exported model's val_mae; the trial ran its own lr.
        assert trial["metric"] == pytest.approx(exported["val_mae"], rel=1e-4)
        assert trial["parameters"]["learning-rate"] in (0.1, 0.001)
    best = min(outs["trials"], key=lambda t: t["metric"])
    assert outs["best_trial"] == best["id"] and outs["best_parameters"] == best["parameters"]
