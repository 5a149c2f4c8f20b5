"""examples/housing/ through the local stack's real path: config -> stack -> CustomJob -> provider -> runner.

The job inputs are the ones the stack registers under Pulumi's mock runtime; the real provider and local
runner then run the example's own process. A first run is cancelled mid-training (SIGTERM, as a preemption
sends), a second one with the same inputs resumes from its checkpoint and writes the model and metrics.json.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from infra.stack import build
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from infra.vertex.provider import CustomJobProvider
from infra.vertex.runners.local.runner import job_dir
from tests.fakes.pulumi_mocks import run_program
from tests.stack.conftest import JOB_ENV_OVERRIDES, ROOT, run_stack, stack_config

pytestmark = pytest.mark.slow
EXAMPLE = ROOT / "examples" / "housing"
# The TensorFlow C++ start-up lines a CPU-only machine prints (quiet runs: none may reach the user).
STARTUP_NOISE = ("cudart_stub", "Could not find cuda drivers", "cuInit", "absl::InitializeLog")


def _registered_train_job(local_dir: Path) -> dict[str, Any]:
    cfg = stack_config("housing", localDir=str(local_dir))
    run = run_program(lambda: build(cfg), stack="housing")
    jobs = {job.name: job.inputs for job in run.by_type(RESOURCE_TYPE)}
    assert sorted(jobs) == ["train"], "dataSource none: no data-preparation job"
    return {key: value for key, value in jobs["train"].items() if key != "__provider"}


def _wait_for_line(log: Path, text: str, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = log.read_text() if log.exists() else ""
        if text in content:
            return content
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {log}:\n{content}")


@pytest.fixture(scope="module")
def interrupted_then_resumed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    mp = pytest.MonkeyPatch()
    # The job's environment comes from where `pulumi up` runs: start from the defaults (module scope: the
    # conftest's per-test fixture does not cover this fixture).
    for name in JOB_ENV_OVERRIDES:
        mp.delenv(name, raising=False)
    capture = tmp_path_factory.mktemp("housing")
    inputs = {**_registered_train_job(capture / "stack"), "poll_interval_seconds": 0.2}
    provider = CustomJobProvider()
    try:
        first = provider.create(provider.check({}, {**inputs, "wait": False}).inputs)
        log = job_dir(inputs["base_output_dir"], first.id) / "workerpool0-0.log"
        first_log = _wait_for_line(log, "epoch 3/")
        provider.delete(first.id, first.outs)  # SIGTERM to the replica, like a preemption
        model_dir = Path(first.outs["model_dir"])
        interrupted = {"model_written": model_dir.exists(), "first_log": first_log}
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            second = provider.create(provider.check({}, inputs).inputs)
        return {**interrupted, "inputs": inputs, "outs": second.outs, "stderr": err.getvalue()}
    finally:
        mp.undo()


def test_the_stack_runs_the_examples_own_command_with_its_placeholders_filled() -> None:
    inputs = _registered_train_job(ROOT / ".local" / "stack-housing")
    (pool,) = inputs["worker_pools"]
    cfg = stack_config("housing")
    assert pool["command"] == ["python", "-m", "housing.task"]
    assert pool["args"] == [
        *("--rows", "400", "--epochs", "15", "--batch-size", "32", "--learning-rate", "0.1")
    ]
    assert pool["env"]["PYTHONPATH"] == str(EXAMPLE.parent)  # imported as the image does: /app/housing
    assert pool["image_uri"].startswith("local:") and cfg.trainer.dir == EXAMPLE


def test_an_interrupted_run_resumes_from_its_checkpoint(interrupted_then_resumed: dict[str, Any]) -> None:
    r = interrupted_then_resumed
    assert not r["model_written"], "the cancel came mid-training, before the model was saved"
    assert "epoch 15/15" not in r["first_log"]
    resumed = [line for line in r["stderr"].splitlines() if "resumed from checkpoint at epoch" in line]
    assert len(resumed) == 1, r["stderr"]
    epoch = int(resumed[0].split("at epoch ")[1].split("/")[0])
    assert 4 <= epoch <= 15
    assert "chief-0| epoch 1/15 " not in r["stderr"], "the resumed run starts after the checkpointed epoch"


def test_the_model_and_metrics_output(interrupted_then_resumed: dict[str, Any]) -> None:
    import numpy as np
    import tensorflow as tf

    outs = interrupted_then_resumed["outs"]
    assert outs["state"] == "JOB_STATE_SUCCEEDED", outs["error"]
    model_dir = Path(outs["model_dir"])
    written = json.loads((model_dir / "metrics.json").read_text())
    assert outs["metrics"] == written and set(written) >= {"val_loss", "val_mae"}
    # A price model that learned something: the target's spread is ~190 (thousands), its error far below.
    assert written["val_mae"] < 60, written
    serve = tf.saved_model.load(str(model_dir)).signatures["serving_default"]
    houses = np.array([[120, 4, 10, 2], [60, 2, 50, 25]], dtype="float32")
    (prices,) = serve(features=tf.constant(houses)).values()
    assert prices.shape == (2, 1) and prices[0, 0] > prices[1, 0], "bigger, newer, central costs more"


def test_a_local_cpu_job_shows_no_tensorflow_startup_lines(interrupted_then_resumed: dict[str, Any]) -> None:
    r = interrupted_then_resumed
    assert "chief-0| epoch 15/15" in r["stderr"]
    assert not [line for line in r["stderr"].splitlines() if any(n in line for n in STARTUP_NOISE)]
    (pool,) = r["inputs"]["worker_pools"]
    assert pool["env"]["CUDA_VISIBLE_DEVICES"] == "-1" and pool["env"]["TF_CPP_MIN_LOG_LEVEL"] == "3"


def test_the_dev_stack_with_the_examples_keys_builds_its_image_and_runs_its_command() -> None:
    run = run_stack(
        "dev",
        trainerDir="examples/housing",
        trainerCommand=["python", "-m", "housing.task"],
        trainerArgs=["--epochs", "{epochs}", "--output-root", "{bucket}/housing"],
        dataSource="none",
    )
    jobs = {job.name: job.inputs for job in run.by_type(RESOURCE_TYPE)}
    assert sorted(jobs) == ["train"]
    (pool,) = jobs["train"]["worker_pools"]
    assert pool["command"] == ["python", "-m", "housing.task"]
    assert pool["args"] == [
        "--epochs",
        "3",
        "--output-root",
        f"gs://{stack_config('dev').bucket_name}/housing",
    ]
    assert "PYTHONPATH" not in pool["env"] and "CUDA_VISIBLE_DEVICES" not in pool["env"]
    from infra.cloudbuild.context import archive_tag

    build_inputs = run.named("image").inputs
    assert build_inputs["tag"] == archive_tag(EXAMPLE)
    assert pool["image_uri"].startswith("us-central1-docker.pkg.dev/") and "@sha256:" in pool["image_uri"]
    assert run.outputs["data_job_name"] == "" and run.outputs["data_dir"] == ""
