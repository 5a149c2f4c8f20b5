"""A job its dollar cap stopped (CANCELLED) stops what depends on it: no training, no model version."""

from __future__ import annotations

import pytest

from infra.stack import build
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB
from infra.vertex.model.resource import RESOURCE_TYPE as MODEL_VERSION
from infra.vertex.tuning.resource import RESOURCE_TYPE as TUNING_JOB
from infra.workloads.gate import UpstreamJobError, require_succeeded
from tests.fakes.pulumi_mocks import MockedRun, run_program
from tests.stack.conftest import cached_run, stack_config
from tests.stack.test_tuning_stack import STUDY

CAPPED = {
    "state": "JOB_STATE_CANCELLED",
    "error": "Training job j1 was cancelled because its running cost reached max_cost_usd USD 5.00",
}


def _run_capped(stack: str, capped: str) -> tuple[MockedRun, UpstreamJobError]:
    """Run the stack with job `capped` ending CANCELLED: what was registered, and the program's error."""
    run = MockedRun()
    cfg = stack_config(stack)
    with pytest.raises(UpstreamJobError) as failed:
        run_program(lambda: build(cfg), stack=stack, job_ends={capped: CAPPED}, run=run)
    return run, failed.value


def test_a_capped_data_job_stops_the_training_job_with_its_paragraph() -> None:
    run, error = _run_capped("dev", "data-prep")
    jobs = [r.name for r in run.by_type(CUSTOM_JOB)]
    assert jobs == ["data-prep"]
    assert "The training job was not run" in str(error) and "JOB_STATE_CANCELLED" in str(error)
    assert "reached max_cost_usd USD 5.00" in str(error)


def test_a_capped_data_job_runs_no_tuning_study() -> None:
    run = MockedRun()
    cfg = stack_config("dev", tuning=STUDY)
    with pytest.raises(UpstreamJobError, match="The tuning study was not run"):
        run_program(lambda: build(cfg), stack="dev", job_ends={"data-prep": CAPPED}, run=run)
    assert run.by_type(TUNING_JOB) == [] and [r.name for r in run.by_type(CUSTOM_JOB)] == ["data-prep"]


def test_a_capped_training_job_registers_no_model_version() -> None:
    run, error = _run_capped("prod", "train")
    assert [r.name for r in run.by_type(CUSTOM_JOB)] == ["data-prep", "train"]
    assert run.by_type(MODEL_VERSION) == []
    assert "The model version was not run" in str(error) and "reached max_cost_usd" in str(error)


def test_succeeded_jobs_let_their_dependents_run_and_say_which_job_they_waited_for() -> None:
    run = cached_run("prod")
    data, train = run.named("data-prep"), run.named("train")
    assert train.inputs["upstream_job"] == data.inputs.get("job_name", train.inputs["upstream_job"])
    assert data.urn in train.dependencies and train.type == CUSTOM_JOB
    assert run.one(MODEL_VERSION).inputs["artifact_uri"].endswith("/model/")


def test_only_a_succeeded_state_passes() -> None:
    assert require_succeeded("JOB_STATE_SUCCEEDED", "j", "", "x") == "j"
    for state in ("JOB_STATE_CANCELLED", "JOB_STATE_FAILED", None):
        with pytest.raises(UpstreamJobError, match="x was not run"):
            require_succeeded(state, "j", "why", "x")
