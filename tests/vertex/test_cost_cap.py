"""max_cost_usd: the cost lines check prints at preview, and the cap that cancels a running job."""

import datetime
import time
from dataclasses import replace

import pytest
from google.cloud import aiplatform_v1

from infra.vertex.cost import preview as cost_preview
from infra.vertex.cost import pricing
from infra.vertex.custom_job import spec
from infra.vertex.lifecycle import cap as cost_cap
from infra.vertex.lifecycle import restarts, spend
from infra.vertex.lifecycle.restarts import ATTEMPT_LABEL
from infra.vertex.lifecycle.spend import SPENT_LABEL
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.provider import CustomJobProvider
from tests.vertex.props import PROJECT, REGION, custom_job_request, job_props, placed, pool

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
    (warning,) = [line for line in lines if "WARNING" in line and "max_cost_usd" in line]
    assert "worst case USD 0.84 is over max_cost_usd USD 0.50" in warning and "raise maxCostUsd" in warning


def test_a_cap_above_the_worst_case_gives_no_warning(fake_vertex, capsys):
    CustomJobProvider().check({}, job_props(max_cost_usd=2, timeout_seconds=7200))
    lines = err_lines(capsys)
    assert any("worst case USD 1.68" in line and "max_cost_usd USD 2.00" in line for line in lines)
    assert not any("WARNING" in line and "max_cost_usd" in line for line in lines)


def test_under_a_cap_a_shape_without_a_price_is_shown_skipped_and_left_out_of_the_worst_case(
    fake_vertex, capsys
):
    l4 = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4", "scheduling_strategy": "STANDARD"}
    CustomJobProvider().check({}, job_props(spot=True, max_cost_usd=1, fallbacks=[l4]))
    lines = err_lines(capsys)
    (skipped,) = [line for line in lines if "cost of fallback 1" in line]
    assert (
        "skipped (maxCostUsd): no sourced price for g2-standard-8 (us-central1, STANDARD), NVIDIA_L4"
        in skipped
    )
    assert "allowUnpricedShapes: true" in skipped
    assert any("worst case USD 0.84" in line for line in lines)  # the T4 shape's bound, the L4 left out
    assert not any("not enforced" in line for line in lines)


def test_with_allow_unpriced_shapes_the_shape_stays_and_the_warning_names_it(fake_vertex, capsys):
    l4 = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4", "scheduling_strategy": "STANDARD"}
    props = job_props(spot=True, max_cost_usd=1, fallbacks=[l4], allow_unpriced_shapes=True)
    CustomJobProvider().check({}, props)
    lines = err_lines(capsys)
    assert any(
        "no price for g2-standard-8 (us-central1, STANDARD), NVIDIA_L4 (us-central1, STANDARD)" in line
        for line in lines
    )
    (warning,) = [line for line in lines if "WARNING" in line and "max_cost_usd" in line]
    assert (
        "WARNING: allowUnpricedShapes is true: max_cost_usd USD 1.00 is not enforced while the job runs on "
        "fallback 1: no price" in warning
    )
    assert cost_preview.worst_case_usd(spec.with_defaults(props)) is None


def test_a_spot_shape_is_capped_at_its_on_demand_price_shown_as_an_upper_bound(fake_vertex, capsys):
    CustomJobProvider().check({}, job_props(spot=True, max_cost_usd=1))
    lines = err_lines(capsys)
    assert (
        "[train-densenet] cost of shape: 1 x n1-standard-8 + 1 x NVIDIA_TESLA_T4 (SPOT): at most USD 0.84/h "
        "(on-demand price; Spot is billed below it, "
        "https://cloud.google.com/compute/docs/instances/spot#pricing, read 2026-11-25)"
        ", at most USD 0.84 for timeout_seconds 3600" in lines
    )
    assert not any("not enforced" in line for line in lines)  # dev's default shape is capped


def test_check_warns_that_a_job_not_waited_for_is_not_capped(fake_vertex, capsys):
    CustomJobProvider().check({}, job_props(max_cost_usd=5, wait=False))
    (warning,) = [line for line in err_lines(capsys) if "WARNING" in line and "max_cost_usd" in line]
    assert "max_cost_usd USD 5.00 is not enforced with wait: false" in warning


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
    # FLEX_START has no price of its own: the same shape's on-demand price bounds it.
    assert (
        f"(FLEX_START): at most USD {shape:.2f}/h (on-demand price; FLEX_START is billed below it" in lines[2]
    )
    assert cost_preview.worst_case_usd(props) == round(v100 / 2, 2)


def test_a_replacement_says_what_the_previous_run_cost(fake_vertex, capsys):
    provider = CustomJobProvider()
    olds = {**spec.with_defaults(job_props()), "duration_seconds": 1800.0, "job_name": "j"}
    olds["state"] = "JOB_STATE_SUCCEEDED"
    result = provider.diff("j", olds, job_props(display_name="train-densenet", timeout_seconds=7200))
    assert result.replaces == ["timeout_seconds"]
    expected = f"expected cost USD {HOURLY / 2:.2f}: the previous run took 30m 00s at USD {HOURLY:.2f}/h"
    assert f"[train-densenet] {expected}" in err_lines(capsys)
    # A run the cap (or a failure) stopped says nothing of what a whole run costs.
    provider.diff("j", {**olds, "state": "JOB_STATE_CANCELLED"}, job_props(timeout_seconds=7200))
    assert not any("expected cost" in line for line in err_lines(capsys))


def test_a_running_job_is_cancelled_when_its_cost_of_all_attempts_reaches_the_cap(fake_vertex, capsys):
    fake_vertex.auto_advance = False
    job = custom_job_request(spec.with_defaults(job_props()))
    job.labels[ATTEMPT_LABEL] = "2-3000"  # a first attempt ran 50 minutes on this shape
    job.labels[SPENT_LABEL] = f"{round(HOURLY * 3000 / 36)}-1"  # and cost this, in cents
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


def test_a_spot_job_past_its_cap_is_cancelled_at_the_on_demand_bound(fake_vertex, capsys):
    """No Spot price is sourced without the catalog: the cap counts the same shape's on-demand price."""
    fake_vertex.auto_advance = False
    job = custom_job_request(spec.with_defaults(job_props(spot=True)))
    name = fake_vertex.add_job(PARENT, job, JobState.JOB_STATE_RUNNING)
    fake_vertex.jobs[name].start_time = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1800)
    provider = CustomJobProvider()
    cap = HOURLY / 4  # a quarter hour at the on-demand bound; the job has run half an hour
    outs = provider.create(
        provider.check({}, job_props(spot=True, max_cost_usd=cap, poll_interval_seconds=0.1)).inputs
    ).outs
    assert outs["state"] == "JOB_STATE_CANCELLED" and outs["cost_cap_reached"] is True
    assert outs["estimated_cost_bound"] is True and outs["estimated_cost_usd"] >= HOURLY / 2 - 1e-3
    assert "reached max_cost_usd" in outs["error"] and "at most USD" in outs["error"]
    assert "(on-demand price; Spot is billed below it" in outs["error"]
    assert any("estimated cost at most USD" in line for line in err_lines(capsys))  # the closing line


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
    capped = placed(job_props(max_cost_usd=HOURLY))
    queued = JobStatus("j", "JOB_STATE_QUEUED", "url", create_time="2026-11-22T10:00:00+00:00")
    assert cost_cap.reach_time(capped, queued) <= time.time() + cost_cap.QUEUED_RECHECK_SECONDS
    assert cost_cap.reach_time(placed(job_props()), queued) == float("inf")  # no cap


V100 = 0.436998 + 2.8520  # n1-standard-8 + 1 x V100 on demand, the cited table
PREEMPTED = "The replica workerpool0-0 was preempted: STOCKOUT (Spot capacity reclaimed by Compute Engine)"


def test_time_on_a_dearer_shape_counts_at_its_own_price_after_a_move(fake_vertex, monkeypatch, capsys):
    """Half an hour on V100, then the T4 fallback: the cap counts USD 1.64 + 0.42, not an hour of T4."""
    monkeypatch.setattr(restarts, "running_seconds", lambda _status: 1800.0)
    fake_vertex.outcomes = [(JobState.JOB_STATE_FAILED, PREEMPTED)]
    v100 = pool(accelerator_type="NVIDIA_TESLA_V100")
    props = job_props(
        worker_pools=[v100],
        fallbacks=[{"accelerator_type": "NVIDIA_TESLA_T4"}],
        max_restarts=0,
        max_cost_usd=2,
    )
    provider = CustomJobProvider()
    outs = provider.create(provider.check({}, props).inputs).outs
    first, second = [req.custom_job for method, req in fake_vertex.calls if method == "CreateCustomJob"]
    assert SPENT_LABEL not in first.labels and second.labels[SPENT_LABEL] == f"{round(V100 * 50)}-1"
    assert outs["state"] == "JOB_STATE_CANCELLED" and outs["cost_cap_reached"] is True
    spent = round(V100 * 50) / 100 + HOURLY / 2
    assert outs["estimated_cost_usd"] == pytest.approx(spent, abs=1e-4) and spent >= 2  # they agree
    assert f"USD {spent:.2f} at list prices (USD {V100 / 2:.2f} for 1 earlier attempt(s)" in outs["error"]
    assert "over 2 attempts" in outs["error"]


def test_time_on_an_unpriced_shape_is_never_priced_at_another_shapes_rate(fake_vertex, capsys):
    """L4 has no sourced price: its time is not counted, the estimate is absent, stderr says so once."""
    l4 = placed(
        job_props(worker_pools=[pool(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4")],
                  max_cost_usd=1)
    )  # fmt: skip
    running = JobStatus("j", "JOB_STATE_RUNNING", "url", start_time="2026-11-22T10:00:00+00:00")
    carried = replace(running, labels={SPENT_LABEL: "120-2", ATTEMPT_LABEL: "1-3600-1"})
    assert spend.spent(l4.rate, carried).usd == 1.2 and spend.spent(l4.rate, carried).known_usd is None
    assert cost_cap.reach_time(l4, running) == float("inf")  # nothing to count on this shape
    assert cost_cap.reached(l4, carried)  # what the earlier attempts spent is already over the cap
    note = cost_cap.submit_note(l4, spend.Carried(0, 0))
    assert note.startswith("max_cost_usd USD 1.00 is not enforced while the job runs on this shape: no price")
    assert "NVIDIA_L4 (us-central1, STANDARD)" in note
    # An attempt that carries unpriced time (a label without money, or an earlier unpriced shape).
    t4 = placed(job_props(max_cost_usd=1))
    legacy = replace(running, labels={ATTEMPT_LABEL: "2-600"})
    assert spend.Carried.of(legacy) == spend.Carried(0, 1, unpriced=True)
    assert "not counted" in cost_cap.submit_note(t4, spend.Carried(50, 1, unpriced=True))


def test_an_adopted_job_without_the_cost_of_its_earlier_attempts_says_the_cap_cannot_count_them(
    fake_vertex, capsys
):
    job = custom_job_request(spec.with_defaults(job_props()))
    job.labels[ATTEMPT_LABEL] = "2-3000"  # submitted before attempts carried their cost
    fake_vertex.add_job(PARENT, job, JobState.JOB_STATE_SUCCEEDED)  # an interrupted `up` left it behind
    provider = CustomJobProvider()
    outs = provider.create(provider.check({}, job_props(max_cost_usd=5)).inputs).outs
    lines = err_lines(capsys)
    assert any("some of their running time was on a shape with no price" in line for line in lines)
    assert "estimated_cost_usd" not in outs  # part of the cost is unknown: no figure rather than a low one


def test_a_local_run_has_no_price_and_never_reads_the_catalog(monkeypatch):
    """`make train-local` has no cloud credentials: no catalog lookup, no `[pricing] ... unreadable` line."""

    def no_catalog(*_args, **_kwargs):
        raise AssertionError("a local run looked for a price")

    monkeypatch.setattr(pricing, "shape_rate", no_catalog)
    local = placed(job_props(runner="local", base_output_dir="/tmp/run"))
    running = JobStatus("local/j", "JOB_STATE_SUCCEEDED", "url", start_time="2026-11-22T10:00:00+00:00")
    assert local.rate is None
    assert spend.after(local.rate, running).attempts == 1
