"""A study's fallback shapes: the real JobServiceClient and CloudQuotasClient against the tuning fake with
per-shape capacity (trials stocking out, a queue that never moves) and the quota fake."""

from collections.abc import Iterator

import pytest
from google.cloud import aiplatform_v1

from infra.vertex.lifecycle import waiting
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.runners.trials import Trial, TuningStatus
from infra.vertex.tuning import spec as tuning_spec
from infra.vertex.tuning.kind import TUNING_JOB
from infra.vertex.tuning_provider import TuningJobProvider
from tests.fakes.quotas import FakeCloudQuotas
from tests.fakes.vertex import QUEUED, STOCKOUT, STOCKOUT_MESSAGE, shape_of
from tests.fakes.vertex_tuning import FakeTuningJobService
from tests.stack.conftest import stack_config
from tests.vertex.props import PROJECT, REGION, pool, tuning_job_request
from tests.vertex.tuning_props import tuning_props

JobState = aiplatform_v1.JobState
GRID = [{"parameter_id": "learning-rate", "type": "DISCRETE", "values": [0.01, 0.001]}]
# Pulumi.dev.yaml's shape and chain, as the stack passes them: T4 Spot -> L4 Spot on g2 -> T4 on-demand
# (docs/tuning.md quotes the first test's lines as the dev chain).
DEV = stack_config("dev")
DEV_POOL = pool(machine_type=DEV.machine_type, accelerator_type=DEV.accelerator_type)
CHAIN = [dict(entry) for entry in DEV.capacity.fallbacks]
T4, L4 = DEV.machine_type, CHAIN[0]["machine_type"]
T4_SPOT = (T4, "NVIDIA_TESLA_T4", "SPOT")
L4_SPOT = (L4, "NVIDIA_L4", "SPOT")
T4_ON_DEMAND = (T4, "NVIDIA_TESLA_T4", "STANDARD")
STOCKED_OUT = STOCKOUT_MESSAGE.format(region=REGION)


@pytest.fixture
def services(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeTuningJobService, FakeCloudQuotas]]:
    jobs, quotas = FakeTuningJobService(), FakeCloudQuotas()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(quotas.handler()))
    yield jobs, quotas
    jobs.stop()


def create(**overrides) -> dict:
    provider = TuningJobProvider()
    props = tuning_props(
        **{
            "algorithm": "grid",
            "parameters": GRID,
            "spot": True,
            "fallbacks": CHAIN,
            "worker_pools": [DEV_POOL],
            **overrides,
        }
    )
    checked = provider.check({}, props)
    assert checked.failures == []
    return provider.create(checked.inputs).outs


def submitted(jobs: FakeTuningJobService) -> list[aiplatform_v1.HyperparameterTuningJob]:
    return [r.hyperparameter_tuning_job for m, r in jobs.calls if m == "CreateHyperparameterTuningJob"]


def trial_shape(study: aiplatform_v1.HyperparameterTuningJob) -> tuple[str, str, str]:
    return shape_of(aiplatform_v1.CustomJob(job_spec=study.trial_job_spec))


def moves(err: str) -> list[str]:
    return [line for line in err.splitlines() if "] leaving " in line]


def test_primary_trials_stock_out_and_the_fallback_study_succeeds(services, capsys):
    jobs, _quotas = services
    jobs.capacity[T4_SPOT] = STOCKOUT
    outs = create()
    first, second = submitted(jobs)
    assert [trial_shape(first), trial_shape(second)] == [T4_SPOT, L4_SPOT]
    # One study: the same key label on both shapes, so adoption finds either.
    assert first.labels[KEY_LABEL] == second.labels[KEY_LABEL]
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and outs["job_name"] == list(jobs.tuning_jobs)[1]
    assert len(outs["trials"]) == 2 and outs["best_metric"] == 0.5
    assert outs["placement"] == {
        "machine_type": L4,
        "accelerator_type": "NVIDIA_L4",
        "accelerator_count": 1,
        "scheduling_strategy": "SPOT",
        "region": "us-central1",  # placement and attempts name the region (issue 25)
    }
    stocked_out, ran = outs["attempts"]
    assert stocked_out == {
        "job_name": next(iter(jobs.tuning_jobs)),
        "machine_type": T4,
        "accelerator_type": "NVIDIA_TESLA_T4",
        "accelerator_count": 1,
        "scheduling_strategy": "SPOT",
        "region": "us-central1",  # placement and attempts name the region (issue 25)
        "state": "JOB_STATE_FAILED",
        "reason": "2 trials failed, reaching max_failed_trial_count 2. (error code 13 INTERNAL); "
        f"trial 1: {STOCKED_OUT}",
    }
    assert ran == {
        **outs["placement"],
        "job_name": outs["job_name"],
        "state": "JOB_STATE_SUCCEEDED",
        "reason": "",
    }
    assert "estimated_cost_usd" not in outs  # no L4 Spot price in pricing.py: no figure rather than a guess
    err = capsys.readouterr().err
    assert moves(err) == [
        f"[tune-densenet] leaving {T4} + 1 x NVIDIA_TESLA_T4 (SPOT): {stocked_out['reason']}; "
        f"trying next: {L4} + 1 x NVIDIA_L4 (SPOT)"
    ]
    assert "trial 1 INFEASIBLE: learning-rate=0.001 -> no val_accuracy" in err
    # The attempt log quoted in docs/tuning.md.
    print("\n".join(line for line in err.splitlines() if line.startswith("[tune-densenet]")))
    # read keeps the attempts that create saw.
    assert TuningJobProvider().read(outs["job_name"], outs).outs["attempts"] == outs["attempts"]


def test_a_shape_without_quota_for_the_parallel_trials_is_skipped_without_a_study(services, capsys):
    jobs, quotas = services
    # One T4 is enough for one trial, not for the two that run in parallel; the L4 quota holds both.
    quotas.set_quota(PROJECT, "CustomModelTrainingT4GPUsPerProjectPerRegion", default=1)
    quotas.set_quota(PROJECT, "CustomModelTrainingL4GPUsPerProjectPerRegion", default=2)
    outs = create(spot=False, fallbacks=CHAIN[:1])
    (only,) = submitted(jobs)
    assert trial_shape(only) == (L4, "NVIDIA_L4", "STANDARD")
    skipped, ran = outs["attempts"]
    assert skipped["job_name"] == "" and skipped["state"] == "SKIPPED"
    assert (
        skipped["reason"]
        == "quota CustomModelTrainingT4GPUsPerProjectPerRegion in us-central1 is 1, the job needs 2"
    )
    assert ran["state"] == "JOB_STATE_SUCCEEDED" and outs["placement"]["accelerator_type"] == "NVIDIA_L4"
    assert f"leaving {T4} + 1 x NVIDIA_TESLA_T4 (STANDARD): " in capsys.readouterr().err


def test_a_study_still_queued_at_its_queue_limit_is_cancelled_and_gives_way(services):
    jobs, _quotas = services
    jobs.capacity[T4_SPOT] = QUEUED
    outs = create(fallbacks=CHAIN[:1], queue_timeout_seconds=0.3, poll_interval_seconds=0.05)
    cancelled = jobs.tuning_jobs[outs["attempts"][0]["job_name"]]
    assert cancelled.state == JobState.JOB_STATE_CANCELLED and trial_shape(cancelled) == T4_SPOT
    assert outs["attempts"][0]["reason"] == "did not start within queue_timeout_seconds=0.3; cancelled"
    assert outs["placement"]["machine_type"] == L4 and outs["state"] == "JOB_STATE_SUCCEEDED"


def test_every_shape_exhausted_gives_one_paragraph(services):
    jobs, _quotas = services
    for shape in (T4_SPOT, L4_SPOT, T4_ON_DEMAND):
        jobs.capacity[shape] = STOCKOUT
    with pytest.raises(JobError) as raised:
        create()
    message = str(raised.value)
    assert "\n" not in message and len(submitted(jobs)) == 3
    assert message.startswith(f"Tuning job tune-densenet could not get machines in {REGION}: every shape")
    assert f"1. {T4} + 1 x NVIDIA_TESLA_T4 (SPOT) (" in message
    assert f"3. {T4} + 1 x NVIDIA_TESLA_T4 (STANDARD) (" in message
    assert "What to do: request the custom_model_training quotas" in message


def test_an_adopted_study_on_a_fallback_shape_is_not_resubmitted(services):
    jobs, _quotas = services
    props = tuning_spec.with_defaults(
        tuning_props(algorithm="grid", parameters=GRID, spot=True, fallbacks=CHAIN, worker_pools=[DEV_POOL])
    )
    earlier = jobs.add_study(f"projects/{PROJECT}/locations/{REGION}", tuning_job_request(props, 1))
    outs = create()
    assert outs["job_name"] == earlier and submitted(jobs) == []
    assert outs["placement"]["accelerator_type"] == "NVIDIA_L4"


def test_a_study_gives_way_only_when_its_trials_could_not_get_machines():
    def study(state: str, error: str, *reasons: str) -> TuningStatus:
        trials = tuple(
            Trial(id=str(n), state="INFEASIBLE", parameters={}, reason=r) for n, r in enumerate(reasons)
        )
        return TuningStatus(name="s", state=state, console_url="", error=error, trials=trials)

    assert waiting.gave_way(TUNING_JOB, study("JOB_STATE_FAILED", STOCKED_OUT))
    quota = "The following quotas are exceeded: CustomModelTrainingT4GPUsPerProjectPerRegion"
    assert waiting.gave_way(TUNING_JOB, study("JOB_STATE_FAILED", "All trials failed.", STOCKED_OUT, quota))
    assert not waiting.gave_way(
        TUNING_JOB, study("JOB_STATE_FAILED", "All trials failed.", STOCKED_OUT, "exited with status 1")
    )
    assert not waiting.gave_way(TUNING_JOB, study("JOB_STATE_CANCELLED", "CANCELED", STOCKED_OUT))


def test_fallbacks_change_in_place_and_stay_out_of_the_studys_key():
    olds = tuning_spec.with_defaults(tuning_props())
    news = {**olds, "fallbacks": CHAIN}
    assert tuning_spec.job_key(olds) == tuning_spec.job_key(news)
    diff = TuningJobProvider().diff("id", olds, news)
    assert diff.changes and not diff.replaces


def test_a_study_still_refuses_a_dollar_cap():
    failures = TuningJobProvider().check({}, tuning_props(max_cost_usd=5.0)).failures
    assert [f.property for f in failures] == ["max_cost_usd"]
    assert "max_restarts" not in tuning_spec.INPUTS
