"""Fallback shapes and Dynamic Workload Scheduler: the real JobServiceClient and CloudQuotasClient against
fakes with per-shape capacity (stockout, a queue that never moves, preemption of a running job)."""

import threading
import time

import grpc
import pytest
from google.cloud import aiplatform_v1

from infra.vertex.custom_job import spec
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle import waiting
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.restarts import ATTEMPT_LABEL
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.provider import CustomJobProvider
from tests.fakes.vertex import (
    NOT_OFFERED,
    QUEUED,
    STOCKOUT,
    STOCKOUT_MESSAGE,
    WAIT_EXPIRED,
    WAIT_FAILED,
    shape_of,
)
from tests.vertex.props import PROJECT, REGION, custom_job_request, job_props, placed, pool

JobState = aiplatform_v1.JobState
Strategy = aiplatform_v1.Scheduling.Strategy
PARENT = f"projects/{PROJECT}/locations/{REGION}"
T4_SPOT = ("n1-standard-8", "NVIDIA_TESLA_T4", "SPOT")
L4_SPOT = ("g2-standard-8", "NVIDIA_L4", "SPOT")
T4_ON_DEMAND = ("n1-standard-8", "NVIDIA_TESLA_T4", "STANDARD")
# The dev stack's chain: T4 Spot -> L4 Spot on g2 -> T4 on-demand.
CHAIN = [
    {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"},
    {"scheduling_strategy": "STANDARD"},
]
PREEMPTED = "The replica workerpool0-0 was preempted: STOCKOUT (Spot capacity reclaimed by Compute Engine)"


def create(**overrides):
    provider = CustomJobProvider()
    checked = provider.check({}, job_props(**{"spot": True, "fallbacks": CHAIN, **overrides}))
    assert checked.failures == []
    return provider.create(checked.inputs)


def submitted(fake):
    return [req.custom_job for method, req in fake.calls if method == "CreateCustomJob"]


def provider_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("[train-densenet]")]


def test_primary_stocks_out_and_the_first_fallback_runs(fake_google, capsys):
    fake_vertex = fake_google.jobs
    fake_vertex.capacity[T4_SPOT] = STOCKOUT
    outs = create().outs
    first, second = submitted(fake_vertex)
    assert [shape_of(first), shape_of(second)] == [T4_SPOT, L4_SPOT]
    # One job: the same key label on both shapes (adoption finds either); the fallback is labelled shape 1.
    assert first.labels[KEY_LABEL] == second.labels[KEY_LABEL]
    assert second.labels[ATTEMPT_LABEL] == "1-0-1"
    assert second.job_spec.base_output_directory == first.job_spec.base_output_directory
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    assert outs["placement"] == {
        "machine_type": "g2-standard-8",
        "accelerator_type": "NVIDIA_L4",
        "accelerator_count": 1,
        "scheduling_strategy": "SPOT",
        "region": "us-central1",  # placement and attempts name the region (issue 25)
    }
    stocked_out, ran = outs["attempts"]
    assert stocked_out["machine_type"] == "n1-standard-8" and stocked_out["state"] == "JOB_STATE_FAILED"
    assert stocked_out["reason"].startswith(STOCKOUT_MESSAGE.format(region=REGION))
    assert ran == {
        **outs["placement"],
        "job_name": outs["job_name"],
        "state": "JOB_STATE_SUCCEEDED",
        "reason": "",
    }
    assert "estimated_cost_usd" not in outs  # no L4 price in pricing.py: no figure rather than a guess
    lines = provider_lines(capsys.readouterr().err)
    moves = [line for line in lines if "leaving " in line]
    assert moves == [
        f"[train-densenet] leaving n1-standard-8 + 1 x NVIDIA_TESLA_T4 (SPOT): {stocked_out['reason']}; "
        "trying next: g2-standard-8 + 1 x NVIDIA_L4 (SPOT)"
    ]
    assert "(2 attempts)" in lines[-1]
    print("\n".join(lines))  # the attempt log quoted in docs/training-job-resource.md


def test_a_shape_without_quota_is_skipped_without_a_job(fake_vertex_and_quotas, capsys):
    jobs, quotas = fake_vertex_and_quotas
    quotas.set_quota(PROJECT, "CustomModelTrainingT4GPUsPerProjectPerRegion", default=0)
    quotas.set_quota(PROJECT, "CustomModelTrainingL4GPUsPerProjectPerRegion", default=4)
    outs = create(spot=False, fallbacks=CHAIN[:1]).outs
    (only,) = submitted(jobs)
    assert shape_of(only) == ("g2-standard-8", "NVIDIA_L4", "STANDARD")
    skipped, ran = outs["attempts"]
    assert skipped["job_name"] == "" and skipped["state"] == "SKIPPED"
    assert "CustomModelTrainingT4GPUsPerProjectPerRegion in us-central1 is 0" in skipped["reason"]
    assert ran["state"] == "JOB_STATE_SUCCEEDED" and outs["placement"]["accelerator_type"] == "NVIDIA_L4"
    err = capsys.readouterr().err
    assert "leaving n1-standard-8 + 1 x NVIDIA_TESLA_T4 (STANDARD): quota" in err
    # The g2 machine's vCPUs are not held to the N1/E2 quota: one line says they are not checked.
    assert "vCPUs of g2-standard-8; not checked" in err


def test_a_job_still_queued_at_the_queue_timeout_gives_way(fake_vertex):
    fake_vertex.capacity[T4_SPOT] = QUEUED
    outs = create(queue_timeout_seconds=0.3, poll_interval_seconds=0.05).outs
    first = submitted(fake_vertex)[0]
    cancelled = next(job for job in fake_vertex.jobs.values() if job.create_time and shape_of(job) == T4_SPOT)
    assert cancelled.state == JobState.JOB_STATE_CANCELLED and shape_of(first) == T4_SPOT
    assert outs["attempts"][0]["reason"] == "did not start within queue_timeout_seconds=0.3; cancelled"
    assert outs["placement"]["machine_type"] == "g2-standard-8"


def test_flex_start_waits_past_the_queue_timeout_up_to_max_wait(fake_vertex):
    flex = ("a2-highgpu-1g", "NVIDIA_TESLA_A100", "FLEX_START")
    fake_vertex.capacity[flex] = QUEUED
    threading.Timer(0.6, fake_vertex.capacity.pop, (flex,)).start()  # machines free up after 0.6 s
    a100 = pool(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100")
    outs = create(
        spot=None,
        scheduling_strategy="FLEX_START",
        max_wait_seconds=30,
        queue_timeout_seconds=0.3,
        poll_interval_seconds=0.05,
        worker_pools=[a100],
        fallbacks=[],
    ).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and "CancelCustomJob" not in fake_vertex.methods()
    (job,) = submitted(fake_vertex)
    assert job.job_spec.scheduling.strategy == Strategy.FLEX_START
    assert job.job_spec.scheduling.max_wait_duration.total_seconds() == 30
    assert outs["placement"]["scheduling_strategy"] == "FLEX_START"


def test_a_preempted_running_job_resumes_on_the_same_shape(fake_vertex):
    fake_vertex.outcomes = [(JobState.JOB_STATE_FAILED, PREEMPTED)]
    outs = create().outs
    first, second = submitted(fake_vertex)
    assert shape_of(first) == shape_of(second) == T4_SPOT
    assert [a["state"] for a in outs["attempts"]] == ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"]
    assert outs["attempts"][0]["reason"].startswith("preempted while running")
    assert outs["placement"]["machine_type"] == "n1-standard-8"


def test_every_shape_exhausted_is_one_paragraph_naming_each_attempt(fake_vertex):
    for shape in (T4_SPOT, L4_SPOT, T4_ON_DEMAND):
        fake_vertex.capacity[shape] = STOCKOUT
    with pytest.raises(JobError) as raised:
        create()
    message = str(raised.value)
    assert "\n" not in message
    assert len(submitted(fake_vertex)) == 3
    for n, shape in enumerate(
        ["n1-standard-8 + 1 x NVIDIA_TESLA_T4 (SPOT)", "g2-standard-8 + 1 x NVIDIA_L4 (SPOT)",
         "n1-standard-8 + 1 x NVIDIA_TESLA_T4 (STANDARD)"], 1
    ):  # fmt: skip
        assert f"{n}. {shape} (" in message
    assert message.count("Resources are insufficient in region") == 3
    assert f"iam-admin/quotas?project={PROJECT}" in message and "FLEX_START" in message
    assert "fallbackRegions" in message


def test_a_create_refused_for_quota_moves_on_without_retrying(fake_vertex):
    """The second wording of a training-quota error is a quota error: no rate-limit retries, next shape."""
    fake_vertex.fail(
        "CreateCustomJob",
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        message="The following quotas are exceeded: CustomModelTrainingPreemptibleT4GPUsPerProjectPerRegion",
    )
    outs = create().outs
    assert fake_vertex.methods().count("CreateCustomJob") == 2  # the refused one, then the fallback
    skipped = outs["attempts"][0]
    assert skipped["state"] == "SKIPPED" and "CustomModelTrainingPreemptibleT4GPUs" in skipped["reason"]


def test_vertex_refusing_the_gpu_in_a_region_moves_the_chain_with_its_answer(fake_vertex, capsys):
    """Europe-west1 is not in the dated table for L4: check passes, Vertex refuses, the next shape runs."""
    europe_l4 = ("europe-west1", "g2-standard-8", "NVIDIA_L4", "STANDARD")
    fake_vertex.capacity[europe_l4] = NOT_OFFERED
    outs = create(
        spot=False,
        worker_pools=[pool(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4")],
        fallbacks=[{"machine_type": "n1-standard-8", "accelerator_type": "NVIDIA_TESLA_T4"}],
        region="europe-west1",
    ).outs
    refused, ran = outs["attempts"]
    assert refused["state"] == "SKIPPED" and refused["job_name"] == "" and refused["region"] == "europe-west1"
    assert refused["reason"] == (
        'CreateCustomJob refused: Accelerator "NVIDIA_L4" is not supported for machine type "g2-standard-8"'
    )
    assert ran["state"] == "JOB_STATE_SUCCEEDED" and ran["accelerator_type"] == "NVIDIA_TESLA_T4"
    assert fake_vertex.methods().count("CreateCustomJob") == 2  # refused at once: no retries
    assert (
        "leaving g2-standard-8 + 1 x NVIDIA_L4 (STANDARD): CreateCustomJob refused: "
        in capsys.readouterr().err
    )


def test_another_invalid_argument_is_still_final(fake_vertex):
    fake_vertex.fail("CreateCustomJob", grpc.StatusCode.INVALID_ARGUMENT, message="Invalid image URI")
    with pytest.raises(JobError, match="Vertex AI rejected the job spec"):
        create()
    assert fake_vertex.methods().count("CreateCustomJob") == 1


FLEX_L4 = ("g2-standard-8", "NVIDIA_L4", "FLEX_START")


@pytest.mark.parametrize(
    ("ending", "state"), [(WAIT_EXPIRED, "JOB_STATE_EXPIRED"), (WAIT_FAILED, "JOB_STATE_FAILED")]
)
def test_a_flex_start_job_that_ended_without_starting_gives_way_whatever_its_state(
    fake_vertex, ending, state, capsys
):
    fake_vertex.capacity[FLEX_L4] = ending
    outs = create(
        spot=None,
        scheduling_strategy="FLEX_START",
        max_wait_seconds=3600,
        worker_pools=[pool(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4")],
        fallbacks=[{"machine_type": "n1-standard-8", "accelerator_type": "NVIDIA_TESLA_T4",
                    "scheduling_strategy": "STANDARD"}],
    ).outs  # fmt: skip
    waited, ran = outs["attempts"]
    assert waited["state"] == state and waited["scheduling_strategy"] == "FLEX_START"
    assert waited["reason"].startswith(
        "Dynamic Workload Scheduler found no machines within max_wait_seconds=3600: the job ended "
        f"{state} without starting"
    )
    assert (
        ran["state"] == "JOB_STATE_SUCCEEDED" and outs["placement"]["accelerator_type"] == "NVIDIA_TESLA_T4"
    )
    assert "CancelCustomJob" not in fake_vertex.methods()  # Vertex ended the wait, not the provider
    err = capsys.readouterr().err
    assert "leaving g2-standard-8 + 1 x NVIDIA_L4 (FLEX_START): Dynamic Workload Scheduler" in err


def test_a_flex_start_job_that_failed_after_starting_is_the_trainers_failure(fake_vertex):
    fake_vertex.outcomes = [
        (JobState.JOB_STATE_FAILED, "The replica workerpool0-0 exited with a non-zero status of 1")
    ]
    with pytest.raises(JobError, match="exited with a non-zero status"):
        create(
            spot=None,
            scheduling_strategy="FLEX_START",
            worker_pools=[pool(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4")],
            fallbacks=[{"machine_type": "n1-standard-8", "accelerator_type": "NVIDIA_TESLA_T4",
                        "scheduling_strategy": "STANDARD"}],
        )  # fmt: skip
    assert fake_vertex.methods().count("CreateCustomJob") == 1


@pytest.mark.parametrize("edited", [CHAIN, CHAIN[::-1]], ids=["same chain", "chain edited meanwhile"])
def test_an_interrupted_up_adopts_the_live_fallback_job(fake_vertex, edited):
    props = spec.with_defaults(job_props(spot=True, fallbacks=CHAIN))
    live = fake_vertex.add_job(PARENT, custom_job_request(props, 1), JobState.JOB_STATE_RUNNING)
    fake_vertex.jobs[live].labels[ATTEMPT_LABEL] = "1-0-1"
    fake_vertex._advancing.add(live)
    outs = create(fallbacks=edited).outs
    assert outs["job_name"] == live and "CreateCustomJob" not in fake_vertex.methods()
    assert outs["placement"]["machine_type"] == "g2-standard-8"


def test_fallbacks_change_in_place_and_keep_the_job_key():
    provider = CustomJobProvider()
    old = provider.check({}, job_props(spot=True)).inputs
    new = provider.check({}, job_props(spot=True, fallbacks=CHAIN)).inputs
    diff = provider.diff("id", old, new)
    assert diff.changes and not diff.replaces
    assert spec.job_key(old) == spec.job_key(new)


@pytest.mark.parametrize(
    ("state", "error", "started", "gives_way"),
    [
        ("JOB_STATE_FAILED", STOCKOUT_MESSAGE.format(region=REGION), False, True),
        (
            "JOB_STATE_FAILED",
            "The following quotas are exceeded: CustomModelTrainingL4GPUsPerProjectPerRegion",
            False,
            True,
        ),
        ("JOB_STATE_EXPIRED", "", False, True),  # a FLEX_START job Vertex stopped waiting for
        ("JOB_STATE_EXPIRED", "", True, False),
        ("JOB_STATE_FAILED", "The replica workerpool0-0 exited with a non-zero status of 1", False, False),
    ],
)
def test_which_endings_give_way_to_the_next_shape(state, error, started, gives_way):
    start = "2026-11-22T10:00:00+00:00" if started else ""
    assert waiting.gave_way(CUSTOM_JOB, JobStatus("j", state, "", error=error, start_time=start)) is gives_way


@pytest.mark.parametrize(
    ("state", "started", "gives_way"),
    [
        ("JOB_STATE_FAILED", False, True),  # any wording: the wait ran out
        ("JOB_STATE_EXPIRED", False, True),
        ("JOB_STATE_FAILED", True, False),  # it ran: the trainer's failure
        ("JOB_STATE_CANCELLED", False, False),  # a person or the kill switch: never another shape
    ],
)
def test_which_flex_start_endings_give_way(state, started, gives_way):
    start = "2026-11-22T10:00:00+00:00" if started else ""
    status = JobStatus("j", state, "", error="Job failed.", start_time=start)
    a100 = pool(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100")
    flex = placed(job_props(worker_pools=[a100], scheduling_strategy="FLEX_START", max_wait_seconds=60))
    assert waiting.gave_way(CUSTOM_JOB, status, flex) is gives_way
    assert (
        not waiting.gave_way(CUSTOM_JOB, status, placed(job_props(spot=True))) or state == "JOB_STATE_EXPIRED"
    )


def test_update_and_read_after_a_fallback_ran_keep_its_shape_and_attempts(fake_vertex):
    """Edited fallbacks change in place: the shape that ran comes from the job, not from the new list."""
    fake_vertex.capacity[T4_SPOT] = STOCKOUT
    created = create()
    provider = CustomJobProvider()
    # The L4 fallback moves to index 2; index 1 (the label of the job that ran) is now T4 on-demand.
    edited = provider.check({}, job_props(spot=True, fallbacks=CHAIN[::-1], poll_interval_seconds=0.05))
    updated = provider.update(created.id, created.outs, edited.inputs).outs
    assert updated["placement"] == created.outs["placement"]
    assert updated["placement"]["accelerator_type"] == "NVIDIA_L4"
    assert updated["attempts"] == created.outs["attempts"] and len(updated["attempts"]) == 2
    read = provider.read(created.id, updated).outs
    assert read["placement"] == created.outs["placement"] and read["attempts"] == created.outs["attempts"]


def test_an_update_waits_on_a_flex_start_fallback_by_its_max_wait(fake_vertex):
    flex = ("a2-highgpu-1g", "NVIDIA_TESLA_A100", "FLEX_START")
    fallback = {"machine_type": flex[0], "accelerator_type": flex[1], "scheduling_strategy": flex[2]}
    overrides = {"fallbacks": [fallback], "max_wait_seconds": 30, "queue_timeout_seconds": 0.3}
    props = CustomJobProvider().check({}, job_props(**overrides, poll_interval_seconds=0.05)).inputs
    live = fake_vertex.add_job(PARENT, custom_job_request(props, 1), JobState.JOB_STATE_QUEUED)
    fake_vertex.jobs[live].labels[ATTEMPT_LABEL] = "1-0-1"
    fake_vertex._advancing.add(live)
    fake_vertex.capacity[flex] = QUEUED
    threading.Timer(0.6, fake_vertex.capacity.pop, (flex,)).start()  # machines free up after 0.6 s
    outs = CustomJobProvider().update(live, {}, props).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and "CancelCustomJob" not in fake_vertex.methods()
    assert outs["placement"]["scheduling_strategy"] == "FLEX_START"


def test_a_cancelled_job_that_has_not_ended_stops_the_chain(fake_vertex, monkeypatch):
    """Never two live jobs: the next shape is submitted only once the cancelled one is terminal."""
    monkeypatch.setattr(waiting, "CANCEL_WAIT_SECONDS", 0.0)  # no time for the cancel to finish
    fake_vertex.capacity[T4_SPOT] = QUEUED
    with pytest.raises(JobError, match=r"still JOB_STATE_QUEUED .* no other shape was submitted"):
        create(queue_timeout_seconds=0.2, poll_interval_seconds=0.05)
    assert fake_vertex.methods().count("CreateCustomJob") == 1
    assert "CancelCustomJob" in fake_vertex.methods()


def test_a_flex_start_job_still_queued_at_max_wait_is_cancelled(fake_vertex, monkeypatch):
    monkeypatch.setattr(waiting, "FLEX_START_WAIT_GRACE_SECONDS", 0.0)
    flex = ("a2-highgpu-1g", "NVIDIA_TESLA_A100", "FLEX_START")
    fake_vertex.capacity[flex] = QUEUED
    a100 = pool(machine_type=flex[0], accelerator_type=flex[1])
    started = time.monotonic()
    with pytest.raises(JobError) as raised:
        create(
            spot=None,
            scheduling_strategy="FLEX_START",
            max_wait_seconds=1,
            queue_timeout_seconds=0.2,
            poll_interval_seconds=0.05,
            worker_pools=[a100],
            fallbacks=[],
        )
    assert time.monotonic() - started >= 1.0  # not at queue_timeout_seconds
    message = str(raised.value)
    assert (
        "did not start within max_wait_seconds=1 " in message and "stack config key maxWaitSeconds" in message
    )
    (job,) = fake_vertex.jobs.values()
    assert job.state == JobState.JOB_STATE_CANCELLED


def test_a_job_preempted_past_max_restarts_moves_to_the_next_fallback(fake_vertex):
    fake_vertex.outcomes = [(JobState.JOB_STATE_FAILED, PREEMPTED)]
    outs = create(max_restarts=0).outs
    first, second = submitted(fake_vertex)
    assert [shape_of(first), shape_of(second)] == [T4_SPOT, L4_SPOT]
    assert second.labels[ATTEMPT_LABEL].startswith("1-") and second.labels[ATTEMPT_LABEL].endswith("-1")
    assert [a["state"] for a in outs["attempts"]] == ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"]
    assert outs["placement"]["accelerator_type"] == "NVIDIA_L4"


def test_every_shape_exhausted_keeps_vertex_text_on_one_line(fake_vertex):
    for shape in (T4_SPOT, L4_SPOT, T4_ON_DEMAND):
        fake_vertex.capacity[shape] = STOCKOUT
    fake_vertex.fail(
        "CreateCustomJob",
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        message="The following quotas are exceeded:\nCustomModelTrainingPreemptibleT4GPUsPerProjectPerRegion",
    )
    with pytest.raises(JobError) as raised:
        create()
    message = str(raised.value)
    assert "exceeded: CustomModelTrainingPreemptibleT4GPUs" in message and "\n" not in message
