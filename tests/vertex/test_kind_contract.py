"""The kind contract written once (lifecycle/kind.py, props.py, checks.py): what a kind must name, the checks
every kind runs with the same words, run.json only in the job's own output directory, and a job's machines as
pools for the cost and quota code."""

from __future__ import annotations

import pytest

from infra.vertex.batch import spec as batch_spec
from infra.vertex.batch.kind import BATCH_PREDICTION_JOB
from infra.vertex.capacity import placement
from infra.vertex.cost import pricing
from infra.vertex.custom_job import spec as custom_spec
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle import run_record
from infra.vertex.lifecycle.kind import Kind
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.lifecycle.props import REQUIRED, SHARED_OUTPUTS
from infra.vertex.tuning.kind import TUNING_JOB
from infra.vertex.tuning.spec import OUTPUTS as TUNING_OUTPUTS
from tests.vertex.batch_props import batch_props
from tests.vertex.props import job_props


def test_a_kind_without_an_output_location_cannot_be_defined() -> None:
    with pytest.raises(TypeError, match="must name its output location"):

        class Nowhere(Kind):
            noun = "Nowhere job"


def test_every_kind_names_its_output_location_record_kind_and_reports_the_shared_outputs() -> None:
    kinds = (CUSTOM_JOB, TUNING_JOB, BATCH_PREDICTION_JOB)
    assert [k.output_key for k in kinds] == ["base_output_dir", "base_output_dir", "output_dir"]
    assert [k.record_kind for k in kinds] == ["custom_job", "tuning_job", "batch_prediction_job"]
    for outputs in (custom_spec.OUTPUTS, TUNING_OUTPUTS, batch_spec.OUTPUTS):
        assert set(SHARED_OUTPUTS) <= set(outputs)
    # The props the lifecycle needs are defaulted or required by every kind's spec.
    for spec, props in ((custom_spec, job_props()), (batch_spec, batch_props())):
        assert set(spec.with_defaults(props)) >= REQUIRED


def test_run_json_is_never_written_outside_the_jobs_own_output_dir(monkeypatch) -> None:
    written: list[str] = []
    monkeypatch.setattr(run_record, "write_text", lambda uri, _text: written.append(uri))
    warnings: list[str] = []
    run_record.keep(
        Outcome.stored({"job_name": "j", "runner": "local"}, BATCH_PREDICTION_JOB),
        warnings.append,
        BATCH_PREDICTION_JOB,
        "",
    )
    assert written == [] and "no output directory of its own" in warnings[0]
    run_record.keep(
        Outcome.stored({"job_name": "j"}, BATCH_PREDICTION_JOB),
        warnings.append,
        BATCH_PREDICTION_JOB,
        "gs://b/predictions/1",
    )
    assert written == ["gs://b/predictions/1/run.json"]


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"runner": "cloud"}, "runner"),
        ({"labels": {"Bad Key": "x"}}, "labels"),
        ({"poll_interval_seconds": 0}, "poll_interval_seconds"),
        ({"queue_timeout_seconds": -1}, "queue_timeout_seconds"),
        ({"display_name": "x" * 129}, "display_name"),
        ({"max_cost_usd": 0}, "max_cost_usd"),
        ({"region": "us-central"}, "region"),
        ({"wait": "yes"}, "wait"),
    ],
)
def test_every_kind_runs_the_shared_checks_with_the_same_words(overrides, key) -> None:
    found = []
    for spec, props in ((custom_spec, job_props(**overrides)), (batch_spec, batch_props(**overrides))):
        found.append(
            sorted(reason for prop, reason in spec.validate(spec.with_defaults(props)) if prop == key)
        )
    assert found[0] and found[0] == found[1]


def test_a_batch_jobs_machines_are_one_prediction_pool_with_no_training_price() -> None:
    props = batch_spec.with_defaults(batch_props(max_replica_count=3))
    (pool,) = batch_spec.body(props).pools
    assert pool.replica_count == 3 and pool.prediction
    assert pricing.pool_hourly("us-central1", pool) is None  # never priced at a training price
    assert pricing.missing("us-central1", [pool], "STANDARD") == [
        "n1-standard-4 (us-central1, batch prediction: no sourced price)"
    ]
    shape = placement.primary_shape(props, (pool,))
    assert (shape.machine_type, shape.scheduling_strategy) == ("n1-standard-4", "STANDARD")
    moved = batch_spec.body(props).on(placement.resolve({"region": "europe-west4"}, shape))
    assert moved.common.region == "europe-west4" and moved.pools == (pool,)


def test_one_registry_of_kinds_names_each_row_of_the_kill_switch_table_once() -> None:
    from infra.guard.job_kinds import JOB_KINDS
    from infra.vertex import kinds

    # infra/guard's import-free table (what the kill switch cancels) and the lifecycle's kinds are one list.
    assert sorted(k.api_kind for k in kinds.KINDS) == sorted(row.name for row in JOB_KINDS)
    rows = {row.name: row for row in JOB_KINDS}
    assert all(k.collection == rows[k.api_kind].collection for k in kinds.KINDS)
    assert kinds.run_folders() == ("runs", "tuning", "predictions")
    assert kinds.permissions(kinds.TUNING_JOB)[0] == "aiplatform.hyperparameterTuningJobs.create"


def test_every_kind_parses_its_own_body_and_a_record_without_it_still_parses() -> None:
    """JobRequest.body is typed by the kind's spec module; state stored without the kind's keys (a delete of
    an old record) parses to an empty body rather than failing."""
    from infra.vertex.lifecycle.request import JobRequest
    from infra.vertex.tuning import spec as tuning_spec
    from tests.vertex.tuning_props import tuning_props

    linked = job_props(experiment="vertex-training-dev", experiment_run="train-a1")
    training: custom_spec.Training = JobRequest.parse(CUSTOM_JOB, linked).body
    assert (training.experiment, training.experiment_run) == ("vertex-training-dev", "train-a1")
    assert (
        training.chief_args == ("--epochs", "2") and training.common.output_dir == linked["base_output_dir"]
    )
    study = JobRequest.parse(TUNING_JOB, tuning_props(max_trial_count=5, parallel_trial_count=2)).body
    assert study.waves == 3 and study.common == study.trial.common
    inputs = JobRequest.parse(BATCH_PREDICTION_JOB, batch_props()).body
    assert inputs.instances_uri == batch_props()["output_dir"].rstrip("/") + "/" + batch_spec.INSTANCES_FILE
    bare = {"runner": "vertex", "region": "us-central1", "display_name": "old"}
    old: tuning_spec.Study = JobRequest.parse(TUNING_JOB, bare).body
    assert (old.goal, old.max_trial_count, old.parallel_trial_count) == ("MAXIMIZE", 1, 1)  # its defaults
    assert old.trial.worker_pools == ()
    old_batch = JobRequest.parse(BATCH_PREDICTION_JOB, bare).body
    assert (old_batch.images, old_batch.common.output_dir) == ("", "")
