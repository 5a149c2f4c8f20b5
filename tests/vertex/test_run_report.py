"""The run's outputs (duration, cost, metrics.json) and the summary line that ends `pulumi up`."""

import json

import pytest

from infra.vertex.capacity import placement
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.custom_job.report import run_outputs, summary_line
from infra.vertex.lifecycle import attempts
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.lifecycle.request import JobRequest
from infra.vertex.lifecycle.restarts import ATTEMPT_LABEL
from infra.vertex.lifecycle.spend import SPENT_LABEL
from infra.vertex.lifecycle.status import JobStatus
from tests.vertex.props import job_props, placed

START, END = "2026-11-22T10:00:00+00:00", "2026-11-22T11:00:00+00:00"  # one hour running


def outputs_of(*args):
    """run_outputs as the engine's outputs (the contract's form)."""
    return run_outputs(*args).as_outputs()


def status(state="JOB_STATE_SUCCEEDED", labels=None):
    return JobStatus("projects/p/locations/l/customJobs/1", state, "url", "", START, START, END, labels or {})


def test_metrics_are_read_from_the_gs_model_dir(fake_storage):
    fake_storage.put(
        "gs://demo-bucket/runs/1/model/metrics.json", json.dumps({"val_accuracy": 0.93}).encode()
    )
    warnings: list[str] = []
    outs = outputs_of(placed(job_props()), status(), warnings.append)
    assert outs["metrics"] == {"val_accuracy": 0.93}
    assert outs["duration_seconds"] == 3600.0
    assert outs["estimated_cost_usd"] == pytest.approx(0.436998 + 0.4025, abs=1e-4)  # n1-standard-8 + T4
    assert warnings == []


def test_no_metrics_file_means_no_metrics_output(fake_storage):
    outs = outputs_of(placed(job_props()), status(), pytest.fail)
    assert "metrics" not in outs


def test_an_unreadable_metrics_file_warns_and_the_run_still_reports(fake_storage):
    fake_storage.put("gs://demo-bucket/runs/1/model/metrics.json", b"{not json")
    warnings: list[str] = []
    outs = outputs_of(placed(job_props()), status(), warnings.append)
    assert "metrics" not in outs and outs["duration_seconds"] == 3600.0
    assert len(warnings) == 1 and "metrics.json" in warnings[0]


def test_a_failed_job_has_no_metrics_but_a_duration_and_cost():
    outs = outputs_of(placed(job_props()), status("JOB_STATE_FAILED"), pytest.fail)
    assert "metrics" not in outs
    assert outs["estimated_cost_usd"] == pytest.approx(0.436998 + 0.4025, abs=1e-4)
    # No Spot price is sourced without the catalog: the on-demand price is counted, marked as a bound.
    spot = outputs_of(placed(job_props(spot=True)), status("JOB_STATE_FAILED"), pytest.fail)
    assert spot["estimated_cost_usd"] == outs["estimated_cost_usd"] and spot["estimated_cost_bound"] is True
    assert "estimated_cost_bound" not in outs


def test_earlier_attempts_count_towards_duration_and_cost():
    labels = {ATTEMPT_LABEL: "2-1800", SPENT_LABEL: "42-1"}  # half an hour at USD 0.84/h before
    outs = outputs_of(placed(job_props()), status("JOB_STATE_FAILED", labels), pytest.fail)
    assert outs["duration_seconds"] == 5400.0
    assert outs["estimated_cost_usd"] == pytest.approx(0.42 + 0.436998 + 0.4025, abs=1e-4)
    # Earlier running time whose cost the job does not carry: no figure rather than a wrong one.
    legacy = outputs_of(
        placed(job_props()), status("JOB_STATE_FAILED", {ATTEMPT_LABEL: "2-1800"}), pytest.fail
    )
    assert "estimated_cost_usd" not in legacy


def test_an_unpriced_machine_gives_no_cost_output():
    props = job_props(worker_pools=[{"machine_type": "a3-highgpu-8g", "accelerator_type": "NVIDIA_H100_80GB",
                                     "accelerator_count": 8, "replica_count": 1}])  # fmt: skip
    outs = outputs_of(placed(props), status("JOB_STATE_FAILED"), pytest.fail)
    assert "estimated_cost_usd" not in outs


def test_the_summary_line():
    outs = {"state": "JOB_STATE_SUCCEEDED", "duration_seconds": 751.0, "runner": "vertex",
            "metrics": {"val_accuracy": 0.93125, "val_loss": 0.2}, "estimated_cost_usd": 0.8812}  # fmt: skip
    spot = {**job_props(spot=True), "max_cost_usd": 5}
    two = {"attempts": [{}, {}]}
    line = summary_line(Outcome.stored({**spot, **outs, **two}, CUSTOM_JOB), placed(spot))
    assert line == (
        "JOB_STATE_SUCCEEDED after 12m 31s running (2 attempts); val_accuracy 0.9313 val_loss 0.2000; "
        "estimated cost USD 0.88 (SPOT list prices); USD 0.88 of max_cost_usd USD 5.00"
    )
    # After a move to the on-demand fallback, the line names the strategy of the shape that ran.
    ran = {"machine_type": "n1-standard-8", "accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 1,
           "scheduling_strategy": "STANDARD"}  # fmt: skip
    on_demand = placed(spot, shape=placement.shape_from(ran, "us-central1"))
    assert "(STANDARD list prices)" in summary_line(
        Outcome.stored({**spot, **outs, **two, "placement": ran}, CUSTOM_JOB), on_demand
    )
    pools = [{"machine_type": "n1-standard-4", "accelerator_type": "NVIDIA_L4", "accelerator_count": 1}]
    unpriced = {
        "state": "JOB_STATE_SUCCEEDED",
        "duration_seconds": 5,
        "runner": "vertex",
        "region": "us-central1",
    }
    assert summary_line(
        Outcome.stored({**unpriced, "worker_pools": pools}, CUSTOM_JOB),
        placed({**unpriced, "worker_pools": pools}),
    ) == (
        "JOB_STATE_SUCCEEDED after 5s running; "
        "no cost estimate (no price for NVIDIA_L4 (us-central1, STANDARD))"
    )
    # A job that fell back from an unpriced shape to a priced one names what had no price where it ran.
    moved = {**unpriced, "worker_pools": [{**pools[0], "accelerator_type": "NVIDIA_TESLA_T4"}],
             "placement": {**ran, "accelerator_type": "NVIDIA_L4"}}  # fmt: skip
    ran_l4 = placement.shape_from(moved["placement"], "us-central1")
    assert "no price for NVIDIA_L4 (us-central1, STANDARD)" in summary_line(
        Outcome.stored(moved, CUSTOM_JOB), placed(moved, shape=ran_l4)
    )


def test_any_failure_reading_metrics_warns_and_the_run_still_reports(monkeypatch):
    """E.g. storage's RetryError or DataCorruption, which are not GoogleAPICallErrors: never fail a run."""

    def broken(_model_dir):
        raise RuntimeError("Deadline of 120.0s exceeded")

    monkeypatch.setattr("infra.vertex.custom_job.report.read_metrics", broken)
    warnings: list[str] = []
    outs = outputs_of(placed(job_props()), status(), warnings.append)
    assert "metrics" not in outs and outs["duration_seconds"] == 3600.0
    assert len(warnings) == 1 and "Deadline of 120.0s exceeded" in warnings[0]


def test_a_refresh_after_a_fallback_keeps_the_cost_of_the_earlier_attempts():
    """Half an hour on the primary, then an hour on the on-demand fallback: read sees only the last job,
    which carries the primary's cost on its label; its own hour is priced at its own shape."""
    props = job_props(spot=True, fallbacks=[{"scheduling_strategy": "STANDARD"}])
    on_demand = {"machine_type": "n1-standard-8", "accelerator_type": "NVIDIA_TESLA_T4",
                 "accelerator_count": 1, "scheduling_strategy": "STANDARD"}  # fmt: skip
    labels = {ATTEMPT_LABEL: "1-1800-1", SPENT_LABEL: "12-1"}
    last = JobStatus("projects/p/locations/us-central1/customJobs/2", "JOB_STATE_SUCCEEDED", "url", "",
                     START, START, END, labels, placement.shape_from(on_demand, "us-central1"))  # fmt: skip
    request = JobRequest.parse(CUSTOM_JOB, props)
    outs = outputs_of(request.on(attempts.job_shape(last, request)[1]), last, pytest.fail)
    assert outs["estimated_cost_usd"] == pytest.approx(0.12 + 0.436998 + 0.4025, abs=1e-4)
    assert "estimated_cost_bound" not in outs  # the Spot half hour was carried before bounds existed
