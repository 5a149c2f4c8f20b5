"""Spot preemption / stockout: the provider submits the job again (bounded); other failures fail at once."""

import pytest
from google.cloud import aiplatform_v1

from infra.vertex.custom_job import spec
from infra.vertex.lifecycle import restarts
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.restarts import resubmit_delay  # the real one: conftest patches the module's to 0
from infra.vertex.provider import CustomJobProvider
from tests.vertex.props import PROJECT, REGION, custom_job_request, job_props

JobState = aiplatform_v1.JobState
PARENT = f"projects/{PROJECT}/locations/{REGION}"
# The shape of Vertex's message when Spot VMs are reclaimed (docs: "the job fails with a STOCKOUT error").
PREEMPTED = "The replica workerpool0-0 was preempted: STOCKOUT (Spot capacity reclaimed by Compute Engine)"


def create(**overrides):
    provider = CustomJobProvider()
    return provider.create(provider.check({}, job_props(spot=True, **overrides)).inputs)


def created_jobs(fake):
    return [job for job in fake.jobs.jobs.values()]


def test_a_preempted_job_is_submitted_again_and_the_second_attempt_succeeds(fake_google, capsys):
    fake_google.jobs.outcomes = [(JobState.JOB_STATE_FAILED, PREEMPTED)]
    outs = create().outs
    first, second = created_jobs(fake_google)
    assert first.state == JobState.JOB_STATE_FAILED
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and outs["job_name"] == second.name
    # Same key (adoptable after an interrupted up), same output dir (resumes from its checkpoints).
    assert first.labels[KEY_LABEL] == second.labels[KEY_LABEL]
    assert second.job_spec.base_output_directory == first.job_spec.base_output_directory
    assert restarts.ATTEMPT_LABEL not in first.labels
    assert second.labels[restarts.ATTEMPT_LABEL].startswith("2-")
    err = capsys.readouterr().err
    assert f"{first.name} lost its machines ({PREEMPTED}" in err and "submitting attempt 2 of 4" in err
    assert "(2 attempts)" in err  # the closing summary


def test_attempts_share_one_running_time_cap(fake_google, monkeypatch):
    """timeout_seconds caps the running time of all attempts together, not of each one."""
    monkeypatch.setattr(restarts, "running_seconds", lambda _status: 1000.0)
    fake_google.jobs.outcomes = [(JobState.JOB_STATE_FAILED, PREEMPTED)]
    create(timeout_seconds=3600)
    _first, second = created_jobs(fake_google)
    assert second.job_spec.scheduling.timeout.total_seconds() == 2600
    assert second.labels[restarts.ATTEMPT_LABEL] == "2-1000"


def test_no_new_attempt_once_the_cap_is_spent(fake_google, monkeypatch, capsys):
    monkeypatch.setattr(restarts, "running_seconds", lambda _status: 3600.0)
    fake_google.jobs.outcomes = [(JobState.JOB_STATE_FAILED, PREEMPTED)]
    with pytest.raises(JobError, match="STOCKOUT"):
        create(timeout_seconds=3600)
    assert len(created_jobs(fake_google)) == 1
    assert "already ran timeout_seconds" in capsys.readouterr().err


def test_new_attempts_wait_longer_each_time():
    delays = [resubmit_delay(restarts.Attempt(n, 0)) for n in range(2, 8)]
    assert delays == [60.0, 120.0, 240.0, 480.0, 900.0, 900.0]


def test_the_restart_limit_is_honoured(fake_google):
    fake_google.jobs.outcomes = [(JobState.JOB_STATE_FAILED, PREEMPTED)] * 3
    with pytest.raises(JobError) as raised:
        create(max_restarts=1)
    assert len(created_jobs(fake_google)) == 2
    assert PREEMPTED in str(raised.value)


def test_no_restarts_when_max_restarts_is_zero(fake_google):
    fake_google.jobs.outcomes = [(JobState.JOB_STATE_FAILED, PREEMPTED)]
    with pytest.raises(JobError):
        create(max_restarts=0)
    assert len(created_jobs(fake_google)) == 1


def test_a_genuine_failure_is_not_retried(fake_google):
    fake_google.jobs.outcomes = [(JobState.JOB_STATE_FAILED, "The replica workerpool0-0 exited with code 1")]
    with pytest.raises(JobError, match="exited with code 1"):
        create()
    assert len(created_jobs(fake_google)) == 1


def test_an_interrupted_up_adopts_the_live_attempt_not_the_failed_one(fake_google):
    props = spec.with_defaults(job_props(spot=True))
    job = custom_job_request(props)
    fake_google.jobs.add_job(PARENT, job, JobState.JOB_STATE_FAILED)
    again = restarts.resubmission(job, restarts.Attempt(2, 600), remaining=3000)
    live = fake_google.jobs.add_job(PARENT, again, JobState.JOB_STATE_RUNNING)
    fake_google.jobs._advancing.add(live)  # let it finish when polled
    outs = create().outs
    assert outs["job_name"] == live
    assert len(fake_google.jobs.jobs) == 2  # nothing new submitted
    assert outs["duration_seconds"] >= 600  # the earlier attempt's running time is counted


def test_max_restarts_is_validated_and_changes_in_place():
    provider = CustomJobProvider()
    failures = provider.check({}, job_props(max_restarts=-1)).failures
    assert [f.property for f in failures] == ["max_restarts"]
    old = provider.check({}, job_props()).inputs
    new = provider.check({}, job_props(max_restarts=5)).inputs
    diff = provider.diff("id", old, new)
    assert diff.changes and not diff.replaces
    assert spec.job_key(old) == spec.job_key(new)


@pytest.mark.parametrize(
    ("state", "error", "expected"),
    [
        ("JOB_STATE_FAILED", PREEMPTED, True),
        ("JOB_STATE_FAILED", "Resources are insufficient in region: us-central1.", True),
        ("JOB_STATE_FAILED", "ZONE_RESOURCE_POOL_EXHAUSTED in us-central1-a", True),
        ("JOB_STATE_FAILED", "The replica workerpool0-0 exited with a non-zero status of 1", False),
        ("JOB_STATE_CANCELLED", PREEMPTED, False),
    ],
)
def test_which_endings_count_as_lost_machines(state, error, expected):
    from infra.vertex.lifecycle.status import JobStatus

    assert restarts.lost_capacity(JobStatus("n", state, "", error=error)) is expected
