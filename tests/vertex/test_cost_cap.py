"""max_cost_usd: the cost lines check prints at preview, and the cap that cancels a running job."""

import datetime
import time

import pytest
from google.cloud import aiplatform_v1

from infra.vertex import cost_cap, cost_preview, spec
from infra.vertex.provider import CustomJobProvider
from infra.vertex.restarts import ATTEMPT_LABEL
from infra.vertex.status import JobStatus
from tests.vertex.props import PROJECT, REGION, job_props, pool

JobState = aiplatform_v1.JobState
PARENT = f"projects/{PROJECT}/locations/{REGION}"
# n1-standard-8 + 1 x T4 on demand in us-central1, from the cited table (the fake Vertex has no catalog).
HOURLY = 0.436998 + 0.4025


def err_lines(capsys):
    return capsys.readouterr().err.splitlines()


def test_check_prints_the_hourly_price_the_worst_case_and_a_warning_over_the_cap(fake_vertex, capsys):
    CustomJobProvider().check({}, job_props(max_cost_usd=0.5))
    lines = err_lines(capsys)
    assert (
        "[train-densenet] cost of shape: 1 x n1-standard-8 + 1 x NVIDIA_TESLA_T4 (STANDARD): USD 0.84/h, "
        "USD 0.84 for timeout_seconds 3600" in lines
    )
    assert "[train-densenet] worst case USD 0.84 (list prices, all attempts); max_cost_usd USD 0.50" in lines
    (warning,) = [line for line in lines if "WARNING" in line]
    assert "worst case USD 0.84 is over max_cost_usd USD 0.50" in warning and "raise maxCostUsd" in warning


def test_a_cap_above_the_worst_case_gives_no_warning(fake_vertex, capsys):
    CustomJobProvider().check({}, job_props(max_cost_usd=2, timeout_seconds=7200))
    lines = err_lines(capsys)
    assert any("worst case USD 1.68" in line and "max_cost_usd USD 2.00" in line for line in lines)
    assert not any("WARNING" in line for line in lines)


def test_a_shape_without_a_price_is_named_and_the_cap_is_said_to_be_unenforceable(fake_vertex, capsys):
    CustomJobProvider().check({}, job_props(spot=True, max_cost_usd=1))
    lines = err_lines(capsys)
    assert any(
        "no price for n1-standard-8 (us-central1, SPOT), NVIDIA_TESLA_T4 (us-central1, SPOT)" in line
        for line in lines
    )
    assert any("WARNING: max_cost_usd USD 1.00 cannot be enforced" in line for line in lines)


def test_fallbacks_each_get_a_line_and_the_worst_case_is_the_dearest_shape(fake_vertex_and_catalog):
    _jobs, catalog = fake_vertex_and_catalog
    catalog.add_sku("Custom Training Nvidia Tesla V100 GPU running in Americas", 2.48)
    catalog.add_sku("Custom Training N1 Predefined Instance Core running in Americas", 0.03)
    catalog.add_sku("Custom Training N1 Predefined Instance Ram running in Americas", 0.004, unit="GiBy.h")
    props = spec.with_defaults(
        job_props(
            worker_pools=[
                pool(machine_type="n1-standard-4"),
                pool(machine_type="n1-standard-4", replica_count=2),
            ],
            fallbacks=[{"accelerator_type": "NVIDIA_TESLA_V100"}, {"scheduling_strategy": "FLEX_START"}],
            timeout_seconds=1800,
        )
    )
    lines = cost_preview.preview_lines(props)
    machine = 4 * 0.03 + 15 * 0.004  # n1-standard-4: 4 vCPUs, 15 GiB, from the catalog
    shape, v100 = (
        3 * (machine + 0.4025),
        3 * (machine + 2.48),
    )  # T4 from the cited table, V100 from the catalog
    assert lines[0] == (
        "cost of shape: 1 x n1-standard-4 + 1 x NVIDIA_TESLA_T4, 2 x n1-standard-4 + 1 x NVIDIA_TESLA_T4 "
        f"(STANDARD): USD {shape:.2f}/h, USD {shape / 2:.2f} for timeout_seconds 1800"
    )
    assert lines[1].startswith("cost of fallback 1: 1 x n1-standard-4 + 1 x NVIDIA_TESLA_V100, 2 x ")
    assert lines[1].endswith(f"(STANDARD): USD {v100:.2f}/h, USD {v100 / 2:.2f} for timeout_seconds 1800")
    assert "(FLEX_START): no price for n1-standard-4 (us-central1, FLEX_START)" in lines[2]
    assert cost_preview.worst_case_usd(props) is None  # a shape without a price leaves the worst case open


def test_a_replacement_says_what_the_previous_run_cost(fake_vertex, capsys):
    provider = CustomJobProvider()
    olds = {**spec.with_defaults(job_props()), "duration_seconds": 1800.0, "job_name": "j"}
    result = provider.diff("j", olds, job_props(display_name="train-densenet", timeout_seconds=7200))
    assert result.replaces == ["timeout_seconds"]
    expected = f"expected cost USD {HOURLY / 2:.2f}: the previous run took 30m 00s at USD {HOURLY:.2f}/h"
    assert f"[train-densenet] {expected}" in err_lines(capsys)


def test_a_running_job_is_cancelled_when_its_cost_of_all_attempts_reaches_the_cap(fake_vertex, capsys):
    fake_vertex.auto_advance = False
    job = spec.build_custom_job(spec.with_defaults(job_props()))
    job.labels[ATTEMPT_LABEL] = "2-3000"  # a first attempt ran 50 minutes
    name = fake_vertex.add_job(PARENT, job, JobState.JOB_STATE_RUNNING)
    # This attempt has run 599 s: 3599 s in all, one second short of an hour's price.
    fake_vertex.jobs[name].start_time = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=599)
    provider = CustomJobProvider()
    outs = provider.create(
        provider.check({}, job_props(max_cost_usd=HOURLY, poll_interval_seconds=0.1)).inputs
    ).outs

    assert outs["state"] == "JOB_STATE_CANCELLED" and outs["cost_cap_reached"] is True
    assert fake_vertex.methods().count("CancelCustomJob") == 1
    assert outs["estimated_cost_usd"] >= HOURLY - 1e-4
    message = outs["error"]
    assert f"reached max_cost_usd USD {HOURLY:.2f}" in message and "over 2 attempts" in message
    assert "checkpoints stay in gs://demo-bucket/runs/1/checkpoints/" in message and "\n" not in message
    lines = err_lines(capsys)
    assert any(line.endswith(message) for line in lines)  # the paragraph reaches the CLI
    assert any(f"of max_cost_usd USD {HOURLY:.2f}" in line for line in lines)  # the closing line


def test_a_cap_stopped_job_runs_again_when_its_cap_changes_and_other_cap_changes_are_in_place():
    provider = CustomJobProvider()
    olds = {**spec.with_defaults(job_props(max_cost_usd=1)), "job_name": "j"}
    assert provider.diff("j", olds, job_props(max_cost_usd=3)).replaces in (None, [])
    capped = {**olds, "cost_cap_reached": True}
    assert provider.diff("j", capped, job_props(max_cost_usd=3)).replaces == ["max_cost_usd"]


@pytest.mark.parametrize("bad", [0, -1, "5", True])
def test_the_cap_must_be_a_positive_number(bad):
    failures = CustomJobProvider().check({}, job_props(max_cost_usd=bad)).failures
    assert [f.property for f in failures] == ["max_cost_usd"]


def test_a_capped_job_is_looked_at_again_soon_after_it_starts_running():
    props = spec.with_defaults(job_props(max_cost_usd=HOURLY))
    queued = JobStatus("j", "JOB_STATE_QUEUED", "url", create_time="2026-11-22T10:00:00+00:00")
    assert cost_cap.reach_time(props, queued) <= time.time() + cost_cap.QUEUED_RECHECK_SECONDS
    assert cost_cap.reach_time(spec.with_defaults(job_props()), queued) == float("inf")  # no cap
