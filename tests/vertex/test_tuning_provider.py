"""TuningJobProvider against a fake JobService serving HyperparameterTuningJob, through the real client."""

import grpc
import pytest
from google.cloud import aiplatform_v1

from infra.vertex.capacity.placement import Pool
from infra.vertex.cost import pricing
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.tuning import spec as tuning_spec
from infra.vertex.tuning.kind import TUNING_JOB
from infra.vertex.tuning_provider import TuningJobProvider
from tests.fakes.quotas import FakeCloudQuotas
from tests.fakes.vertex_tuning import FakeTuningJobService
from tests.vertex.props import PROJECT, REGION, placed, pool, tuning_job_request
from tests.vertex.tuning_props import tuning_props

JobState = aiplatform_v1.JobState
PARENT = f"projects/{PROJECT}/locations/{REGION}"
GRID = [
    {"parameter_id": "learning-rate", "type": "DISCRETE", "values": [0.01, 0.001]},
    {"parameter_id": "batch-size", "type": "DISCRETE", "values": [16, 32]},
]


# The metric each grid point reports. Grid order (DISCRETE values ascending): trial 3 (lr 0.01, batch 16) is
# the best, trial 2 (lr 0.001, batch 32) the lowest.
@pytest.fixture
def fake(fake_study: FakeTuningJobService) -> FakeTuningJobService:
    return fake_study


def checked(**overrides) -> dict:
    result = TuningJobProvider().check({}, tuning_props(algorithm="grid", parameters=GRID, **overrides))
    assert result.failures == []
    return result.inputs


def test_create_runs_the_study_prints_each_trial_and_reports_the_best(fake, capsys):
    props = checked()
    result = TuningJobProvider().create(props)
    outs = result.outs
    assert result.id.startswith(f"{PARENT}/hyperparameterTuningJobs/")
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    # What Vertex received is exactly the spec built from the props.
    (sent,) = [r for m, r in fake.calls if m == "CreateHyperparameterTuningJob"]
    assert sent.parent == PARENT
    assert sent.hyperparameter_tuning_job == tuning_job_request(tuning_spec.with_defaults(props))
    assert [(t["id"], t["state"], t["metric"]) for t in outs["trials"]] == [
        ("1", "SUCCEEDED", 0.61),
        ("2", "SUCCEEDED", 0.55),
        ("3", "SUCCEEDED", 0.83),
        ("4", "SUCCEEDED", 0.72),
    ]
    assert outs["trials"][2]["parameters"] == {"learning-rate": 0.01, "batch-size": 16.0}
    assert outs["best_trial"] == "3"
    assert outs["best_parameters"] == {"learning-rate": 0.01, "batch-size": 16.0}
    assert outs["best_metric"] == 0.83
    # Four trials of 600 s each on the trial job's machines, at the listed prices.
    assert outs["duration_seconds"] == 2400.0
    assert outs["estimated_cost_usd"] == pricing.estimate_usd(REGION, [Pool.of(pool())], False, 2400.0)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "] trial " in line]
    assert lines == [
        "[tune-densenet] trial 1 SUCCEEDED: batch-size=16 learning-rate=0.001 -> val_accuracy 0.6100 (600s)",
        "[tune-densenet] trial 2 SUCCEEDED: batch-size=32 learning-rate=0.001 -> val_accuracy 0.5500 (600s)",
        "[tune-densenet] trial 3 SUCCEEDED: batch-size=16 learning-rate=0.01 -> val_accuracy 0.8300 (600s)",
        "[tune-densenet] trial 4 SUCCEEDED: batch-size=32 learning-rate=0.01 -> val_accuracy 0.7200 (600s)",
    ]
    summary = err.strip().splitlines()[-1]
    assert "JOB_STATE_SUCCEEDED: 4 trials (0 failed), 40m 00s of trial time" in summary
    assert "best trial 3: batch-size=16 learning-rate=0.01 -> val_accuracy 0.8300" in summary


def test_minimize_picks_the_lowest_metric(fake):
    outs = TuningJobProvider().create(checked(goal="MINIMIZE", metric_id="val_loss")).outs
    assert (outs["best_trial"], outs["best_metric"]) == ("2", 0.55)


def test_a_failed_trial_within_max_failed_trial_count_leaves_the_study_succeeding(fake, capsys):
    fake.metric_for = lambda p: None if p["batch-size"] == 32.0 and p["learning-rate"] == 0.001 else 0.7
    outs = TuningJobProvider().create(checked(max_failed_trial_count=2)).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    assert [t["state"] for t in outs["trials"]] == ["SUCCEEDED", "INFEASIBLE", "SUCCEEDED", "SUCCEEDED"]
    assert (
        "metric" not in outs["trials"][1] and "exited with a non-zero status" in outs["trials"][1]["reason"]
    )
    assert outs["best_trial"] == "1"
    assert (
        "trial 2 INFEASIBLE: batch-size=32 learning-rate=0.001 -> no val_accuracy" in capsys.readouterr().err
    )


def test_too_many_failed_trials_fail_the_study_with_their_reasons(fake):
    fake.metric_for = lambda p: None if p["learning-rate"] == 0.001 else 0.7
    with pytest.raises(JobError) as raised:
        TuningJobProvider().create(checked(max_failed_trial_count=2))
    message = str(raised.value)
    (name,) = fake.tuning_jobs
    assert name in message and "JOB_STATE_FAILED" in message
    assert "reaching max_failed_trial_count 2" in message
    assert "trial 1: replica workerpool0-0 exited with a non-zero status of 1" in message


def test_an_interrupted_create_is_adopted_not_duplicated(fake, capsys):
    props = checked()
    earlier = fake.add_study(PARENT, tuning_job_request(tuning_spec.with_defaults(props)))
    outs = TuningJobProvider().create(props).outs
    assert outs["job_name"] == earlier and outs["state"] == "JOB_STATE_SUCCEEDED"
    assert "CreateHyperparameterTuningJob" not in fake.methods()
    assert f"adopting {earlier}" in capsys.readouterr().err


def test_a_failed_earlier_study_is_not_adopted(fake):
    props = checked()
    fake.add_study(PARENT, tuning_job_request(tuning_spec.with_defaults(props)), JobState.JOB_STATE_FAILED)
    TuningJobProvider().create(props)
    assert fake.methods().count("CreateHyperparameterTuningJob") == 1


def test_delete_cancels_a_running_study_then_deletes_it(fake):
    props = tuning_spec.with_defaults(checked(wait=False))
    fake.auto_advance = False
    outs = TuningJobProvider().create(props).outs
    assert outs["state"] == "JOB_STATE_QUEUED"
    fake.auto_advance = True
    TuningJobProvider().delete(outs["job_name"], outs)
    assert fake.methods()[-3:] == [
        "CancelHyperparameterTuningJob",
        "GetHyperparameterTuningJob",
        "DeleteHyperparameterTuningJob",
    ]
    assert fake.tuning_jobs == {}
    # Gone already: delete is done.
    TuningJobProvider().delete(outs["job_name"], outs)
    assert TuningJobProvider().read(outs["job_name"], outs).id == ""


def test_quota_for_parallel_trials_is_checked_before_submitting(monkeypatch):
    jobs, quotas = FakeTuningJobService(), FakeCloudQuotas()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(quotas.handler()))
    try:
        # One T4 is enough for one trial, not for the two that run in parallel.
        quotas.set_quota(PROJECT, "CustomModelTrainingT4GPUsPerProjectPerRegion", default=1)
        with pytest.raises(JobError, match="is 1; this job needs 2 "):
            TuningJobProvider().create(checked())
        assert "CreateHyperparameterTuningJob" not in jobs.methods()
    finally:
        jobs.stop()


def test_diff_replaces_on_a_changed_study_and_changes_wait_in_place():
    provider = TuningJobProvider()
    olds = tuning_props()
    assert provider.diff("id", olds, {**olds, "max_trial_count": 6}).replaces == ["max_trial_count"]
    in_place = provider.diff("id", olds, {**olds, "poll_interval_seconds": 9.0})
    assert in_place.changes and not in_place.replaces
    assert provider.diff("id", olds, dict(olds)).changes is False


def test_a_create_whose_response_was_lost_is_found_not_repeated(fake):
    fake.fail("CreateHyperparameterTuningJob", grpc.StatusCode.UNAVAILABLE, applied=True)
    outs = TuningJobProvider().create(checked()).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and len(fake.tuning_jobs) == 1
    assert fake.methods()[:4] == [
        "ListHyperparameterTuningJobs",
        "CreateHyperparameterTuningJob",
        "ListHyperparameterTuningJobs",
        "GetHyperparameterTuningJob",
    ]


def test_check_prints_a_trials_price_and_the_studys_worst_case(capsys):
    # n1-standard-8 + 1 x T4 on demand, from pricing.py's cited table: 4 trials x 1 h each at most.
    checked(spot=False, timeout_seconds=3600, max_trial_count=4)
    hourly = pricing.shape_hourly(REGION, [Pool.of(pool())], "STANDARD")
    assert hourly == pytest.approx(0.436998 + 0.4025)
    lines = [
        line.split("] ", 1)[1]
        for line in capsys.readouterr().err.splitlines()
        if not line.startswith("[pricing]")  # the catalog's one line, when this process reads it first
    ]
    assert lines[:3] == [
        f"cost of a trial: 1 x n1-standard-8 + 1 x NVIDIA_TESLA_T4 (STANDARD): USD {hourly:.2f}/h",
        f"worst case USD {hourly * 4:.2f}: 4 trials x timeout_seconds 3600 (list prices)",
        "WARNING: no dollar cap on the study: maxCostUsd caps the training job only; the study stops at "
        "max_trial_count x timeout_seconds, or when the budget kill switch cancels it",
    ]
    # T4's regions are not in the Locations table read for gpu_regions.py: a warning, not a verdict.
    assert lines[3:] == [line for line in lines[3:] if line.startswith("WARNING: whether Vertex AI offers")]


def test_a_spot_studys_trial_shows_its_on_demand_bound(capsys):
    checked(spot=True)
    err = capsys.readouterr().err.splitlines()
    line, worst, cap, *_gpu = [text for text in err if not text.startswith("[pricing]")]
    assert "WARNING: no dollar cap on the study" in cap
    assert "(list prices, on-demand for Spot/FLEX_START shapes without one)" in worst
    assert line.endswith(
        "(SPOT): at most USD 0.84/h (on-demand price; Spot is billed below it, "
        "https://cloud.google.com/compute/docs/instances/spot#pricing, read 2026-11-25)"
    )


def test_a_flex_start_studys_deadline_lets_every_wave_wait_its_max_wait():
    # Issue 16's rule, for studies too: no provider deadline cancels a FLEX_START trial before its max wait.
    from infra.vertex.lifecycle.waiting import DEADLINE_GRACE_SECONDS
    from infra.vertex.runners.trials import TuningStatus

    flex = tuning_spec.with_defaults(
        tuning_props(
            worker_pools=[pool(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4")],
            scheduling_strategy="FLEX_START",
            max_wait_seconds=7200,
            queue_timeout_seconds=600,
            timeout_seconds=3600,
            max_trial_count=4,
            parallel_trial_count=2,
        )
    )
    assert TuningJobProvider().check({}, flex).failures == []
    status = TuningStatus(
        name="s", state="JOB_STATE_PENDING", console_url="", create_time="2026-11-22T10:00:00+00:00"
    )
    start = 1795341600.0  # 2026-11-22T10:00:00Z
    waves = 2  # 4 trials, 2 at a time
    flex_deadline = TUNING_JOB.run_deadline(status, placed(flex, TUNING_JOB))
    assert flex_deadline - start >= waves * (7200 + 3600 + DEADLINE_GRACE_SECONDS)
    standard = placed(tuning_props(queue_timeout_seconds=600, timeout_seconds=3600), TUNING_JOB)
    assert TUNING_JOB.run_deadline(status, standard) - start == waves * (600 + 3600 + DEADLINE_GRACE_SECONDS)


def test_a_spot_studys_cost_is_its_trials_time_at_the_on_demand_bound_said_as_a_bound():
    from infra.vertex.runners.trials import Trial, TuningStatus

    study = placed(tuning_props(spot=True), TUNING_JOB)
    trials = tuple(
        Trial(str(n), "SUCCEEDED", {}, 0.5, "2026-11-25T10:00:00+00:00", "2026-11-25T10:30:00+00:00")
        for n in (1, 2)
    )
    status = TuningStatus(name="s", state="JOB_STATE_SUCCEEDED", console_url="", trials=trials)
    out = TUNING_JOB.outputs(study, status, print).as_outputs()
    # One hour of trials on n1-standard-8 + T4, Spot counted at its on-demand list price (USD 0.84/h).
    assert out["estimated_cost_bound"] is True and out["estimated_cost_usd"] == pytest.approx(
        0.8395, abs=1e-3
    )
    ended = {**out, "state": "JOB_STATE_SUCCEEDED", "placement": {"scheduling_strategy": "SPOT"}}
    line = TUNING_JOB.summary(Outcome.stored(ended, TUNING_JOB), study)
    assert "estimated cost at most USD 0.84 (on-demand price; Spot is billed below it" in line
