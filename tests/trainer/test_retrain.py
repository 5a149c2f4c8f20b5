"""A second run into the same dirs with other hyperparameters starts fresh, in a folder of its own, and says
so in one line; the same command again resumes that run; metrics.json is the run's own. (Another class
count: test_local_run.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.trainer.helpers import run, task_command

# Another backbone among the other hyperparameters: ResNet50 also trains and exports in about half
# DenseNet121's time (tests/vertex/test_local_tuning_trainer.py).
RETRAIN = ("--backbone", "resnet50", "--batch-size", "8", "--epochs", "1", "--fine-tune-epochs", "0")


def _runs(checkpoints: Path) -> set[str]:
    return {p.name for p in checkpoints.iterdir() if p.name.startswith("run-")}


@pytest.fixture(scope="module")
def retrained(trained: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The shared 3-class run's dirs (copied), trained into again with other hyperparameters, twice."""
    assert trained["rc"] == 0, trained["log"]
    job = tmp_path_factory.mktemp("retrain") / "job"
    shutil.copytree(trained["root"] / "job", job)
    before = _runs(job / "checkpoints")
    cmd = [*task_command(trained["data"], job / "model"), *RETRAIN]
    first = run(cmd)
    first_metrics = json.loads((job / "model" / "metrics.json").read_text())
    again = run(cmd)
    return {
        "job": job,
        "before": before,
        "first": first,
        "first_metrics": first_metrics,
        "again": again,
        "metrics": json.loads((job / "model" / "metrics.json").read_text()),
    }


def test_other_hyperparameters_start_fresh_and_say_what_differs(retrained: dict) -> None:
    first = retrained["first"]
    log = first.stdout + first.stderr
    assert first.returncode == 0, log
    (earlier,) = retrained["before"]
    checkpoints = retrained["job"] / "checkpoints"
    (new,) = _runs(checkpoints) - retrained["before"]
    assert (
        f"{checkpoints / earlier} holds the checkpoints of another run (backbone densenet121 -> resnet50, "
        in log
    )
    assert "epochs 3 -> 1, fine_tune_epochs 1 -> 0, batch_size 16 -> 8)" in log
    assert f"starts fresh in {checkpoints / new}, where the same command resumes it" in log
    assert "already finished" not in log  # the other run's finished phases were not taken as this run's
    assert " head epoch 1/1 " in log
    assert (
        checkpoints / earlier / "done-fine_tune" / "DONE"
    ).exists()  # the other run's are left as they were


def test_metrics_json_describes_the_run_that_happened(retrained: dict) -> None:
    metrics = retrained["first_metrics"]
    assert metrics["global_batch_size"] == 8
    assert list(metrics["history"]) == ["head"] and len(metrics["history"]["head"]["val_accuracy"]) == 1
    (new,) = _runs(retrained["job"] / "checkpoints") - retrained["before"]
    assert metrics["run_id"] == new


def test_the_same_command_again_resumes_that_run_and_keeps_its_history(retrained: dict) -> None:
    again = retrained["again"]
    log = again.stdout + again.stderr
    assert again.returncode == 0, log
    assert "phases ['head'] of this run already finished" in log
    assert "holds the checkpoints of another run" not in log and " epoch " not in log
    # The finished phase's epochs come from its checkpoint: metrics.json is that run's, whole.
    assert retrained["metrics"]["history"] == retrained["first_metrics"]["history"]
    assert retrained["metrics"]["run_id"] == retrained["first_metrics"]["run_id"]


def test_the_retraining_says_it_replaces_the_model_and_keeps_each_runs_logs_apart(retrained: dict) -> None:
    first = retrained["first"]
    log = first.stdout + first.stderr
    job = retrained["job"]
    (new,) = _runs(job / "checkpoints") - retrained["before"]
    assert (
        f"--model-dir {job / 'model'} holds a model already: this run replaces it when it exports (copy it "
        f"elsewhere first to keep it); TensorBoard logs stay apart, this run's in {job / 'logs' / new}"
    ) in log
    # One folder of TensorBoard logs per run, named as its checkpoints' folder: the two runs never mix.
    assert _runs(job / "logs") == _runs(job / "checkpoints")
    assert any((job / "logs" / new).rglob("events.out.tfevents.*"))
