"""run.json: what the record holds (and never holds), where it is written, and that writing it never fails a
job; through the real providers against the fake JobService / tuning service and the fake Cloud Storage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.cloud import aiplatform_v1

from infra.vertex.custom_job import spec
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle import run_record, waiting
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.provider import CustomJobProvider
from infra.vertex.tuning_provider import TuningJobProvider
from tests.fakes.storage import FakeStorage
from tests.fakes.vertex import STOCKOUT
from tests.vertex.props import PROJECT, REGION, custom_job_request, job_props, pool
from tests.vertex.test_tuning_provider import checked

SECRET = "hunter2-token"
JobState = aiplatform_v1.JobState


def test_the_record_keeps_what_describes_the_run_and_no_environment() -> None:
    outputs = {
        **job_props(
            worker_pools=[pool(env={"API_TOKEN": SECRET}), pool(args=["--worker"], env={"X": SECRET})]
        ),
        "job_name": "projects/p/locations/r/customJobs/1",
        "state": "JOB_STATE_SUCCEEDED",
        "metrics": {"val_accuracy": 0.9},
        "placement": {"machine_type": "n1-standard-8"},
        "attempts": [{"job_name": "projects/p/locations/r/customJobs/1", "state": "JOB_STATE_SUCCEEDED"}],
        "duration_seconds": 12.5,
        "estimated_cost_usd": 0.01,
        "cost_cap_reached": False,
    }
    kept = run_record.record(Outcome.stored(outputs, CUSTOM_JOB), CUSTOM_JOB)
    assert SECRET not in json.dumps(kept)
    assert kept["stack"] == "dev" and kept["kind"] == "custom_job" and kept["record_version"] == 1
    assert kept["args"] == ["--epochs", "2"] and kept["image"] == pool()["image_uri"]
    assert kept["service_account"] == outputs["service_account"]
    assert {
        k: kept[k] for k in ("job_name", "state", "metrics", "duration_seconds", "estimated_cost_usd")
    } == {k: outputs[k] for k in ("job_name", "state", "metrics", "duration_seconds", "estimated_cost_usd")}
    assert "worker_pools" not in kept and "labels" not in kept and "trials" not in kept


def test_a_write_error_is_one_warning_and_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    warnings: list[str] = []
    run_record.keep(
        Outcome.stored({"base_output_dir": str(blocker / "run"), "runner": "local"}, CUSTOM_JOB),
        warnings.append,
        CUSTOM_JOB,
    )
    (warning,) = warnings
    assert warning.startswith(f"could not write {blocker}/run/run.json: ")


def test_a_cloud_job_writes_its_record_to_its_gs_output_dir(fake_vertex, fake_storage: FakeStorage) -> None:
    provider = CustomJobProvider()
    outs = provider.create(provider.check({}, job_props()).inputs).outs
    kept = json.loads(fake_storage.get("gs://demo-bucket/runs/1/run.json") or b"{}")
    assert kept["job_name"] == outs["job_name"] and kept["state"] == "JOB_STATE_SUCCEEDED"
    assert kept["end_time"] == outs["end_time"] and kept["stack"] == "dev"


SOURCES = {
    "builder_image": "gcr.io/cloud-builders/docker@sha256:" + "b" * 64,
    "base_images": ["tensorflow/tensorflow:2.21.0-gpu@sha256:" + "c" * 64],
}


def test_a_job_records_how_its_image_was_made(fake_vertex, fake_storage: FakeStorage) -> None:
    """The image build's builder and base images, by digest, reach run.json via the job's image_sources."""
    provider = CustomJobProvider()
    provider.create(provider.check({}, job_props(image_sources=SOURCES)).inputs)
    kept = json.loads(fake_storage.get("gs://demo-bucket/runs/1/run.json") or b"{}")
    assert kept["image_sources"] == SOURCES and kept["image"] == pool()["image_uri"]
    assert "image_sources" not in run_record.record(Outcome.stored(job_props(), CUSTOM_JOB), CUSTOM_JOB), (
        "none recorded: none claimed"
    )


@pytest.mark.parametrize("provider", [CustomJobProvider(), TuningJobProvider()], ids=["job", "study"])
def test_image_sources_change_in_place_and_a_job_from_before_them_keeps_running(provider) -> None:
    olds = checked() if isinstance(provider, TuningJobProvider) else job_props()
    news = {**olds, "image_sources": SOURCES}
    diff = provider.diff("id", {**olds, "job_name": "j"}, news)
    assert diff.changes is True and diff.replaces == []
    assert provider.diff("id", {**news, "job_name": "j"}, news).changes is False


def test_a_studys_record_lists_its_trials_and_the_best(fake_study, fake_storage: FakeStorage) -> None:
    outs = TuningJobProvider().create(checked()).outs
    kept = json.loads(fake_storage.get("gs://demo-bucket/runs/1/run.json") or b"{}")
    assert kept["kind"] == "tuning_job" and kept["metric_id"] == "val_accuracy"
    assert kept["trials"] == outs["trials"] and len(kept["trials"]) == 4
    assert (kept["best_trial"], kept["best_metric"]) == ("3", 0.83)
    assert kept["best_parameters"] == {"learning-rate": 0.01, "batch-size": 16.0}


@pytest.mark.parametrize(
    ("args", "values"),
    [
        (
            ["--epochs", "3", "--lr=0.1", "--flag", "--name", "x"],
            {"epochs": "3", "lr": "0.1", "flag": "true", "name": "x"},
        ),
        (["positional", "--last"], {"last": "true"}),
    ],
)
def test_arg_values(args: list[str], values: dict[str, str]) -> None:
    assert run_record.arg_values(args) == values


def test_a_job_cancelled_past_its_deadline_keeps_its_record(
    fake_vertex, fake_storage: FakeStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(waiting, "DEADLINE_GRACE_SECONDS", 0.0)
    fake_vertex.auto_advance = False
    props = job_props(timeout_seconds=1, poll_interval_seconds=0.2)
    job = custom_job_request(spec.with_defaults(props))
    name = fake_vertex.add_job(f"projects/{PROJECT}/locations/{REGION}", job, JobState.JOB_STATE_RUNNING)
    provider = CustomJobProvider()
    with pytest.raises(JobError, match="ran past timeout_seconds=1"):
        provider.create(provider.check({}, props).inputs)
    kept = json.loads(fake_storage.get("gs://demo-bucket/runs/1/run.json") or b"{}")
    assert (kept["job_name"], kept["state"]) == (name, "JOB_STATE_CANCELLED")


def test_a_failed_study_keeps_its_record_with_the_failed_trials(
    fake_study, fake_storage: FakeStorage
) -> None:
    fake_study.metric_for = lambda p: None if p["learning-rate"] == 0.001 else 0.7
    with pytest.raises(JobError, match="JOB_STATE_FAILED"):
        TuningJobProvider().create(checked(max_failed_trial_count=2))
    kept = json.loads(fake_storage.get("gs://demo-bucket/runs/1/run.json") or b"{}")
    assert kept["kind"] == "tuning_job" and kept["state"] == "JOB_STATE_FAILED"
    assert [t["state"] for t in kept["trials"]].count("INFEASIBLE") >= 2


def test_a_chain_that_gave_way_everywhere_records_every_attempt_and_the_paragraph(
    fake_vertex, fake_storage: FakeStorage
) -> None:
    fallback = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"}
    fake_vertex.capacity.update(
        {
            ("n1-standard-8", "NVIDIA_TESLA_T4", "STANDARD"): STOCKOUT,
            ("g2-standard-8", "NVIDIA_L4", "STANDARD"): STOCKOUT,
        }
    )
    provider = CustomJobProvider()
    with pytest.raises(JobError, match="could not get machines") as raised:
        provider.create(provider.check({}, job_props(fallbacks=[fallback])).inputs)
    kept = json.loads(fake_storage.get("gs://demo-bucket/runs/1/run.json") or b"{}")
    assert [a["machine_type"] for a in kept["attempts"]] == ["n1-standard-8", "g2-standard-8"]
    assert {a["state"] for a in kept["attempts"]} == {"JOB_STATE_FAILED"}
    assert kept["error"] == str(raised.value) and kept["state"] == "JOB_STATE_FAILED"


def test_stored_outputs_read_back_into_the_same_outcome(fake_vertex) -> None:
    """What the engine stored (this version's dict) reads back as the outcome it was made from."""
    provider = CustomJobProvider()
    outs = provider.create(provider.check({}, job_props()).inputs).outs
    outcome = Outcome.stored(outs, CUSTOM_JOB)
    assert outcome.as_outputs() == outs and outcome.state == outs["state"]
    assert outcome.own.model_dir == outs["model_dir"] and outcome.placement == outs["placement"]
