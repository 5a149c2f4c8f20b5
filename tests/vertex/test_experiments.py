"""Vertex AI Experiments through the real MetadataServiceClient and JobServiceClient, against fakes of both
services on one port (VERTEX_AI_EMULATOR_HOST): one experiment per stack, one run per job, linked in the
CustomJob request and closed with the run's state, parameters and metrics when it ends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from google.cloud import aiplatform_v1

from infra.vertex.custom_job import experiments, spec
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.provider import CustomJobProvider
from tests.fakes.metadata import FakeMetadataService
from tests.fakes.storage import FakeStorage
from tests.fakes.vertex import STOCKOUT, FakeJobService
from tests.vertex.props import PROJECT, REGION, job_props, placed, pool

STORE = f"projects/{PROJECT}/locations/{REGION}/metadataStores/default"
EXPERIMENT = "vertex-training-dev"


@dataclass
class Fakes:
    jobs: FakeJobService
    metadata: FakeMetadataService


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Fakes]:
    jobs, metadata = FakeJobService(), FakeMetadataService()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start(metadata.handler()))
    yield Fakes(jobs, metadata)
    jobs.stop()


def linked_props(run: str, **overrides: object) -> dict[str, object]:
    return job_props(
        base_output_dir=f"gs://demo-bucket/runs/{run}",
        experiment=EXPERIMENT,
        experiment_run=f"train-{run}",
        worker_pools=[
            pool(args=["--epochs", "2", "--learning-rate", f"0.0{run[-1]}", "--data-dir", "gs://d/x"])
        ],
        **overrides,
    )


def create(props: dict[str, object]) -> dict[str, object]:
    provider = CustomJobProvider()
    checked = provider.check({}, props)
    assert not checked.failures, checked.failures
    return provider.create(checked.inputs).outs


def test_each_job_names_its_experiment_and_run_and_the_experiment_is_made_once(
    fakes: Fakes, fake_storage: FakeStorage
) -> None:
    fake_storage.put(
        "gs://demo-bucket/runs/a1/model/metrics.json", b'{"val_accuracy": 0.75, "val_loss": 0.5}'
    )
    first, second = create(linked_props("a1")), create(linked_props("b2"))

    sent = [req.custom_job.job_spec for m, req in fakes.jobs.calls if m == "CreateCustomJob"]
    assert [(s.experiment, s.experiment_run) for s in sent] == [
        (f"{STORE}/contexts/{EXPERIMENT}", f"{STORE}/contexts/{EXPERIMENT}-train-a1"),
        (f"{STORE}/contexts/{EXPERIMENT}", f"{STORE}/contexts/{EXPERIMENT}-train-b2"),
    ]
    assert fakes.metadata.methods().count("CreateMetadataStore") == 1
    assert fakes.metadata.created(experiments.EXPERIMENT_SCHEMA) == [f"{STORE}/contexts/{EXPERIMENT}"]
    assert fakes.metadata.created(experiments.RUN_SCHEMA) == [
        f"{STORE}/contexts/{EXPERIMENT}-train-a1",
        f"{STORE}/contexts/{EXPERIMENT}-train-b2",
    ]
    experiment = fakes.metadata.contexts[f"{STORE}/contexts/{EXPERIMENT}"]
    assert experiment.display_name == EXPERIMENT and experiment.metadata["experiment_deleted"] is False
    for outs, run in ((first, "train-a1"), (second, "train-b2")):
        context = fakes.metadata.contexts[f"{STORE}/contexts/{EXPERIMENT}-{run}"]
        assert list(context.parent_contexts) == [experiment.name] and context.display_name == run
        assert context.metadata["_state"] == "COMPLETE"
        assert outs["experiment_run"] == run
    # The run's parameters (paths left out) and its metrics, as the console's comparison reads them.
    closed = fakes.metadata.contexts[f"{STORE}/contexts/{EXPERIMENT}-train-a1"].metadata
    assert dict(closed["_params"]) == {"epochs": 2.0, "learning-rate": 0.01}
    assert dict(closed["_metrics"]) == {"val_accuracy": 0.75, "val_loss": 0.5}
    # The run's record went to its gs:// output dir, with its link.
    record = json.loads(fake_storage.get("gs://demo-bucket/runs/a1/run.json") or b"{}")
    assert record["experiment"] == EXPERIMENT and record["experiment_run"] == "train-a1"
    assert record["state"] == "JOB_STATE_SUCCEEDED" and record["metrics"]["val_accuracy"] == 0.75


def test_an_adopted_job_keeps_its_run_and_nothing_is_made_twice(fakes: Fakes) -> None:
    props = linked_props("a1")
    create(props)
    calls_before = len([m for m, _ in fakes.jobs.calls if m == "CreateCustomJob"])
    create(props)  # an interrupted `pulumi up` again: the succeeded job with the same key is adopted
    assert len([m for m, _ in fakes.jobs.calls if m == "CreateCustomJob"]) == calls_before == 1
    assert len(fakes.metadata.created(experiments.RUN_SCHEMA)) == 1
    assert fakes.metadata.methods().count("AddContextChildren") == 1
    (job,) = fakes.jobs.jobs.values()
    assert job.job_spec.experiment_run.endswith(f"{EXPERIMENT}-train-a1")


def test_a_failed_job_closes_its_run_as_failed(fakes: Fakes, fake_storage: FakeStorage) -> None:
    fakes.jobs.outcome = aiplatform_v1.JobState.JOB_STATE_FAILED
    fakes.jobs.outcome_error = "trainer exited with 1"
    with pytest.raises(JobError, match="trainer exited with 1"):
        create(linked_props("c3"))
    assert fakes.metadata.contexts[f"{STORE}/contexts/{EXPERIMENT}-train-c3"].metadata["_state"] == "FAILED"
    record = json.loads(fake_storage.get("gs://demo-bucket/runs/c3/run.json") or b"{}")
    assert record["state"] == "JOB_STATE_FAILED" and "trainer exited with 1" in record["error"]


def test_an_unlinked_job_touches_no_metadata(fakes: Fakes) -> None:
    create(job_props())
    (sent,) = [req.custom_job.job_spec for m, req in fakes.jobs.calls if m == "CreateCustomJob"]
    assert (sent.experiment, sent.experiment_run) == ("", "")
    assert fakes.metadata.calls == []


def test_permission_denied_names_the_role(fakes: Fakes) -> None:
    fakes.metadata.fail(
        "CreateContext", grpc.StatusCode.PERMISSION_DENIED, message="aiplatform.contexts.create"
    )
    with pytest.raises(JobError, match=r"roles/aiplatform\.user"):
        create(linked_props("a1"))
    assert not [m for m, _ in fakes.jobs.calls if m == "CreateCustomJob"], "no job without its experiment"


def test_a_context_of_another_kind_under_the_name_is_refused(fakes: Fakes) -> None:
    create(linked_props("a1"))
    fakes.metadata.contexts[f"{STORE}/contexts/other-name"] = aiplatform_v1.Context(
        name=f"{STORE}/contexts/other-name", schema_title="system.PipelineRun"
    )
    with pytest.raises(JobError, match="not an experiment"):
        create({**linked_props("b2"), "experiment": "other-name"})


@pytest.mark.parametrize(
    ("overrides", "prop", "reason"),
    [
        ({"experiment": "Dev"}, "experiment", "4-128 lowercase"),
        ({"experiment": "dev"}, "experiment", "4-128 lowercase"),
        ({"experiment": None}, "experiment_run", "needs experiment"),
        ({"experiment_run": "Train_1"}, "experiment_run", "lowercase letters"),
        ({"experiment_run": "x" * 120}, "experiment_run", "at most 101 characters"),
        (
            {"tensorboard": f"projects/{PROJECT}/locations/{REGION}/tensorboards/1"},
            "experiment",
            "tensorboard",
        ),
    ],
)
def test_check_refuses_bad_links(overrides: dict[str, object], prop: str, reason: str) -> None:
    props = {**linked_props("a1"), **overrides}
    failures = CustomJobProvider().check({}, {k: v for k, v in props.items() if v is not None}).failures
    assert [(f.property, reason in f.reason) for f in failures] == [(prop, True)], failures


def test_a_changed_link_neither_replaces_nor_updates_the_job_and_keeps_its_key() -> None:
    old, new = linked_props("a1"), {**linked_props("a1"), "experiment": "vertex-training-other"}
    diff = CustomJobProvider().diff("id", old, new)
    assert not diff.changes and not diff.replaces  # it applies to the next job (fixed_at_submit)
    assert spec.job_key(spec.with_defaults(old)) == spec.job_key(
        spec.with_defaults(
            job_props(base_output_dir="gs://demo-bucket/runs/a1", worker_pools=old["worker_pools"])
        )
    )


def test_a_job_moved_to_a_fallback_shape_stays_one_run(fakes: Fakes) -> None:
    fakes.jobs.capacity[("n1-standard-8", "NVIDIA_TESLA_T4", "STANDARD")] = STOCKOUT
    fallback = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4", "accelerator_count": 1}
    outs = create(linked_props("a1", fallbacks=[fallback]))
    sent = [req.custom_job.job_spec for m, req in fakes.jobs.calls if m == "CreateCustomJob"]
    assert len(sent) == 2 and outs["placement"]["machine_type"] == "g2-standard-8"
    assert {s.experiment_run for s in sent} == {f"{STORE}/contexts/{EXPERIMENT}-train-a1"}
    assert len(fakes.metadata.created(experiments.RUN_SCHEMA)) == 1
    assert len(fakes.metadata.created(experiments.EXPERIMENT_SCHEMA)) == 1
    assert fakes.metadata.contexts[sent[0].experiment_run].metadata["_state"] == "COMPLETE"


def test_a_link_added_or_renamed_later_never_claims_the_running_job() -> None:
    """A stack from before the link (or a renamed experiment): the job that runs keeps what it was submitted
    with; diff reports no change for the link alone, and an in-place update keeps the old link's outputs."""
    provider = CustomJobProvider()
    olds = {**spec.with_defaults(job_props()), "job_name": "projects/p/locations/r/customJobs/1"}
    news = spec.with_defaults(job_props(experiment="vertex-training-dev", experiment_run="train-a1"))
    assert provider.diff("id", olds, news).changes is False
    renamed = {**news, "experiment": "another-name"}
    assert provider.diff("id", {**olds, "experiment": "vertex-training-dev"}, renamed).changes is False
    assert provider.diff("id", olds, {**news, "poll_interval_seconds": 7}).changes is True


def test_the_same_run_again_is_running_again(fakes: Fakes) -> None:
    """A job replaced with the same run directory reuses its run context: RUNNING until it ends again."""
    create(linked_props("a1"))
    name = experiments.context_name(PROJECT, REGION, "vertex-training-dev-train-a1")
    assert fakes.metadata.contexts[name].metadata["_state"] == "COMPLETE"
    CUSTOM_JOB.before_submit(placed(linked_props("a1")), print)
    assert fakes.metadata.contexts[name].metadata["_state"] == "RUNNING"


def test_run_updates_send_only_the_metadata_by_update_mask(fakes: Fakes) -> None:
    """UpdateContext carries the fields that change, named by update_mask, and none read back (the OUTPUT_ONLY
    create_time, update_time, parent_contexts of googleapis context.proto)."""
    create(linked_props("a1"))
    CUSTOM_JOB.before_submit(placed(linked_props("a1")), print)  # the same run again: RUNNING
    assert len(fakes.metadata.updates) == 2  # COMPLETE at the end, RUNNING again
    for request in fakes.metadata.updates:
        assert list(request.update_mask.paths) == ["metadata"]
        sent = request.context
        assert not sent.create_time and not sent.update_time and not list(sent.parent_contexts)
        assert not sent.schema_title and not sent.display_name
    name = experiments.context_name(PROJECT, REGION, "vertex-training-dev-train-a1")
    stored = fakes.metadata.contexts[name]
    # What was not sent stays: the link to the experiment and the run's kind.
    assert stored.parent_contexts and stored.schema_title == experiments.RUN_SCHEMA
