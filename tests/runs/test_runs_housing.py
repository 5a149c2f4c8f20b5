"""Two local runs of the housing stack with different learning rates, each through the real stack program
(mocked engine), the real provider and local runner, and the example's own process: each leaves a run.json,
and `python -m infra.runs` (a real process) lists, compares and plots them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from infra.stack import build
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from infra.vertex.provider import CustomJobProvider
from tests.fakes.pulumi_mocks import run_program
from tests.stack.conftest import JOB_ENV_OVERRIDES, ROOT, stack_config

pytestmark = pytest.mark.slow
RATES = ("0.1", "0.01")  # the first run gets the first rate, so the newest run has the second
# Matplotlib's first two line colours (its default cycle, "C0" and "C1"), and the third that must not show.
LINE_COLOURS = {"C0": (0x1F, 0x77, 0xB4), "C1": (0xFF, 0x7F, 0x0E), "C2": (0x2C, 0xA0, 0x2C)}


def _train_inputs(local_dir: Path, rate: str) -> dict[str, Any]:
    cfg = stack_config("housing", localDir=str(local_dir), learningRate=float(rate), epochs=4)
    run = run_program(lambda: build(cfg), stack="housing")
    (train,) = [job.inputs for job in run.by_type(RESOURCE_TYPE) if job.name == "train"]
    return {**{k: v for k, v in train.items() if k != "__provider"}, "poll_interval_seconds": 0.2}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    mp = pytest.MonkeyPatch()
    for name in JOB_ENV_OVERRIDES:
        mp.delenv(name, raising=False)
    local_dir = tmp_path_factory.mktemp("housing-runs") / "stack"
    provider = CustomJobProvider()
    try:
        outs = []
        for rate in RATES:
            inputs = _train_inputs(local_dir, rate)
            outs.append(provider.create(provider.check({}, inputs).inputs).outs)
    finally:
        mp.undo()
    return {"root": local_dir, "outs": outs}


def _runs(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infra.runs", "--stack", "housing", "--root", str(root), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )


def test_each_run_leaves_its_record(two_runs: dict[str, Any]) -> None:
    for rate, outs in zip(RATES, two_runs["outs"], strict=True):
        record = json.loads((Path(outs["base_output_dir"]) / "run.json").read_text())
        assert record["state"] == "JOB_STATE_SUCCEEDED" and record["stack"] == "housing"
        assert record["args"][record["args"].index("--learning-rate") + 1] == rate
        assert record["metrics"] == outs["metrics"] and "val_loss" in record["metrics"]
        assert record["job_name"] == outs["job_name"] and record["model_dir"] == outs["model_dir"]
        assert record["duration_seconds"] == outs["duration_seconds"] > 0
        assert record["image"].startswith("local:") and record["command"] == ["python", "-m", "housing.task"]
        assert "env" not in json.dumps(record), "no pool environment in a record"


def test_runs_json_lists_both_newest_first_with_their_args_and_metrics(two_runs: dict[str, Any]) -> None:
    listed = json.loads(_runs(two_runs["root"], "--json").stdout)
    first, second = two_runs["outs"]
    assert [r["run_dir"] for r in listed] == [second["base_output_dir"], first["base_output_dir"]]
    assert [r["args"][r["args"].index("--learning-rate") + 1] for r in listed] == ["0.01", "0.1"]
    assert [r["metrics"]["val_loss"] for r in listed] == [
        second["metrics"]["val_loss"],
        first["metrics"]["val_loss"],
    ]


def test_the_table_shows_what_differs_and_a_corrupt_record_as_unreadable(two_runs: dict[str, Any]) -> None:
    broken = two_runs["root"] / "runs" / "0badc0ffee00"
    broken.mkdir(parents=True, exist_ok=True)
    (broken / "run.json").write_text('{"state": "JOB_STATE_SUCC')
    try:
        lines = _runs(two_runs["root"]).stdout.splitlines()
    finally:
        (broken / "run.json").unlink()
        broken.rmdir()
    header, newest, older, corrupt = lines[1:]
    assert header.split()[:4] == ["WHEN", "(UTC)", "STATE", "learning-rate"], header
    assert newest.split()[2:4] == ["SUCCEEDED", "0.01"] and older.split()[2:4] == ["SUCCEEDED", "0.1"]
    assert newest.split()[4] == "val_loss" and "local" in newest.split()
    assert corrupt.split()[:2] == ["?", "UNREADABLE"] and "runs/0badc0ffee00" in corrupt.split()
    assert corrupt.endswith(
        "run.json unreadable (not JSON: Unterminated string starting at: line 1 column 11 (char 10))"
    )


def test_the_plot_has_one_curve_per_run(two_runs: dict[str, Any], tmp_path: Path) -> None:
    picture = tmp_path / "runs.png"
    result = _runs(two_runs["root"], "--plot", str(picture))
    assert "2 curve(s)" in result.stderr
    pixels = np.asarray(Image.open(picture).convert("RGB")).reshape(-1, 3)
    counts = {name: int(np.all(pixels == rgb, axis=1).sum()) for name, rgb in LINE_COLOURS.items()}
    assert counts["C0"] > 100 and counts["C1"] > 100 and counts["C2"] == 0, counts
