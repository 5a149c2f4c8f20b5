"""Studies run by the local runner: trials as local CustomJobs over the same StudySpec, metrics read from
cloudml-hypertune's file format. A small Python script stands in for the trainer (the slow test in
test_local_tuning_trainer.py runs the built-in one)."""

import json
import sys
import time
from pathlib import Path

import pytest

from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local import study as local_study
from infra.vertex.runners.local.runner import LOCAL_PREFIX, LocalRunner
from infra.vertex.runners.trials import Trial
from infra.vertex.tuning_provider import TuningJobProvider
from tests.vertex.props import pool, tuning_job_request
from tests.vertex.tuning_props import tuning_props

# Reports metric = x * 10 + y (the hypertune file format), or fails when x is 0.3; sleeps for --sleep.
SCRIPT = """
import argparse, json, os, time
p = argparse.ArgumentParser()
p.add_argument("--x", type=float)
p.add_argument("--y", type=float, default=0)
p.add_argument("--sleep", type=float)
a = p.parse_args()
time.sleep(a.sleep)
if a.x == 0.3:
    raise SystemExit("diverged")
os.makedirs(os.path.dirname(os.environ["CLOUD_ML_HP_METRIC_FILE"]), exist_ok=True)
with open(os.environ["CLOUD_ML_HP_METRIC_FILE"], "w") as f:
    for step, value in ((1, 0.0), (2, a.x * 10 + a.y)):
        f.write(json.dumps({"global_step": str(step), "score": str(value), "timestamp": time.time(),
                            "trial": os.environ["CLOUD_ML_TRIAL_ID"]}, sort_keys=True) + "\\n")
with open(os.path.join(os.environ["AIP_MODEL_DIR"].rstrip("/") + ".txt"), "w") as f:
    f.write(os.environ["AIP_MODEL_DIR"])
"""
GRID = [
    {"parameter_id": "x", "type": "DISCRETE", "values": [0.1, 0.2, 0.3]},
    {"parameter_id": "y", "type": "CATEGORICAL", "values": ["1", "2"]},
]


def local_props(tmp_path: Path, sleep: float = 0.0, **overrides) -> dict:
    script = pool(
        command=["python", "-c", SCRIPT],
        args=["--sleep", str(sleep)],
        env={},
        accelerator_type=None,
        accelerator_count=0,
        machine_type="n1-standard-4",
    )
    study = {"metric_id": "score", "algorithm": "grid", "parameters": GRID, "max_trial_count": 4}
    props = tuning_props(
        runner="local",
        base_output_dir=str(tmp_path / "study"),
        worker_pools=[script],
        poll_interval_seconds=0.2,
        **{**study, **overrides},
    )
    checked = TuningJobProvider().check({}, props)
    assert checked.failures == []
    return checked.inputs


def test_local_grid_study_runs_trials_in_their_own_dirs_and_picks_the_best(tmp_path, capsys):
    props = local_props(tmp_path, max_trial_count=5, parallel_trial_count=3, max_failed_trial_count=3)
    outs = TuningJobProvider().create(props).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and outs["job_name"].startswith("local/")
    # Grid order: x varies slowest; trial 5 (x=0.3) fails: INFEASIBLE, within max_failed_trial_count.
    rows = [(t["id"], t["state"], t["parameters"], t.get("metric")) for t in outs["trials"]]
    assert rows == [
        ("1", "SUCCEEDED", {"x": 0.1, "y": "1"}, 2.0),
        ("2", "SUCCEEDED", {"x": 0.1, "y": "2"}, 3.0),
        ("3", "SUCCEEDED", {"x": 0.2, "y": "1"}, 3.0),
        ("4", "SUCCEEDED", {"x": 0.2, "y": "2"}, 4.0),
        ("5", "INFEASIBLE", {"x": 0.3, "y": "1"}, None),
    ]
    assert "exited with code 1" in outs["trials"][4]["reason"] and "diverged" in outs["trials"][4]["reason"]
    assert (outs["best_trial"], outs["best_parameters"], outs["best_metric"]) == (
        "4",
        {"x": 0.2, "y": "2"},
        4.0,
    )
    # Each trial saw AIP_MODEL_DIR = <base>/<trial id>/model/, as Vertex gives a trial.
    for trial in "1234":
        seen = (tmp_path / "study" / trial / "model.txt").read_text()
        assert seen == f"{tmp_path / 'study'}/{trial}/model/"
    assert "estimated_cost_usd" not in outs and outs["duration_seconds"] > 0
    err = capsys.readouterr().err
    assert "trial 4 SUCCEEDED: x=0.2 y=2 -> score 4.0000" in err


def test_too_many_failed_local_trials_fail_the_study(tmp_path):
    grid = [{"parameter_id": "x", "type": "DISCRETE", "values": [0.3]}, GRID[1]]
    with pytest.raises(JobError) as raised:
        TuningJobProvider().create(
            local_props(tmp_path, parameters=grid, max_trial_count=2, max_failed_trial_count=2)
        )
    message = str(raised.value)
    assert "JOB_STATE_FAILED: 2 trials failed, which reaches max_failed_trial_count 2" in message
    assert "diverged" in message


def test_delete_cancels_a_running_local_study(tmp_path):
    provider = TuningJobProvider()
    props = local_props(tmp_path, sleep=60, wait=False, parallel_trial_count=2)
    outs = provider.create(props).outs
    deadline = time.time() + 20
    while len(provider.read(outs["job_name"], outs).outs["trials"]) < 2 and time.time() < deadline:
        time.sleep(0.2)
    trials = provider.read(outs["job_name"], outs).outs["trials"]
    assert [t["state"] for t in trials] == ["ACTIVE", "ACTIVE"]
    started = time.time()
    provider.delete(outs["job_name"], outs)
    assert time.time() - started < 30  # the 60 s trials were stopped, not waited for
    assert provider.read(outs["job_name"], outs).id == ""
    # The study ended only after its trials did (its cancel waits for them): each trial's job says CANCELLED.
    for trial in ("1", "2"):
        runner = LocalRunner(str(tmp_path / "study" / trial))
        (record,) = runner.records.iterdir()
        status = runner.get(LOCAL_PREFIX + record.name)
        assert status is not None and status.state == "JOB_STATE_CANCELLED"


def test_reported_metric_is_the_last_value_for_the_metric(tmp_path):
    path = tmp_path / "output.metrics"
    lines = [{"val_accuracy": "0.5", "global_step": "1"}, {"loss": "0.1"}, {"val_accuracy": "0.75"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    assert local_study.reported_metric(path, "val_accuracy") == 0.75
    assert local_study.reported_metric(path, "val_loss") is None
    assert local_study.reported_metric(tmp_path / "missing", "val_accuracy") is None


def test_a_trial_that_succeeds_without_its_metric_is_infeasible(tmp_path):
    trial = Trial("1", "ACTIVE", {"x": 0.1}, start_time="2026-11-22T10:00:00+00:00")
    job = JobStatus("local/1", "JOB_STATE_SUCCEEDED", "", end_time="2026-11-22T10:01:00+00:00")
    ended = local_study.finished_trial(trial, job, str(tmp_path), "val_accuracy")
    assert ended.state == "INFEASIBLE" and "reported no val_accuracy" in ended.reason
    assert ended.running_seconds() == 60.0


def test_trial_job_adds_flags_env_and_output_dir_to_the_trial_spec(tmp_path):
    from infra.vertex.tuning import spec as tuning_spec

    props = tuning_spec.with_defaults(local_props(tmp_path))
    study = tuning_job_request(props)
    job = local_study.trial_job(study, "3", {"x": 0.2, "y": "2"}, "/runs/study")
    container = job.job_spec.worker_pool_specs[0].container_spec
    assert list(container.args)[-2:] == ["--x=0.2", "--y=2"]
    env = {e.name: e.value for e in container.env}
    assert env["CLOUD_ML_TRIAL_ID"] == "3"
    assert env["CLOUD_ML_HP_METRIC_FILE"] == "/runs/study/3/hypertune/output.metrics"
    assert job.job_spec.base_output_directory.output_uri_prefix == "/runs/study/3"
    assert sys.executable  # the trial's "python" runs in this interpreter (local_command)
