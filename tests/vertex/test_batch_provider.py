"""BatchPredictionProvider against the fake JobService, through the real JobServiceClient and the shared
lifecycle: the request, the outputs and run.json, fallbacks, adoption, cancel/delete and check refusals."""

import json

import pytest
from google.cloud import aiplatform_v1

from infra.vertex.batch import spec
from infra.vertex.batch_provider import BatchPredictionProvider
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.errors import JobError
from tests.fakes.vertex import STOCKOUT
from tests.vertex.batch_props import IMAGES, OUTPUT_DIR, batch_props
from tests.vertex.props import PROJECT, REGION

JobState = aiplatform_v1.JobState
PARENT = f"projects/{PROJECT}/locations/{REGION}"


@pytest.fixture
def provider() -> BatchPredictionProvider:
    return BatchPredictionProvider()


@pytest.fixture
def images(fake_storage):
    """Two images and a file that is not one under the images prefix."""
    for name in ("cats/a.jpg", "dogs/b.PNG", "README.txt"):
        fake_storage.put(IMAGES + name, b"bytes")
    return fake_storage


def create(provider, **overrides):
    checked = provider.check({}, batch_props(**overrides))
    assert not checked.failures, [(f.property, f.reason) for f in checked.failures]
    return provider.create(checked.inputs)


def batch_jobs(fake):
    return [job for job in fake.jobs.values() if isinstance(job, aiplatform_v1.BatchPredictionJob)]


def test_the_request_feeds_the_listed_images_to_the_prebuilt_container(fake_vertex, images, provider):
    create(provider, accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1, max_replica_count=3)
    (job,) = batch_jobs(fake_vertex)
    assert job.input_config.instances_format == "file-list"
    assert list(job.input_config.gcs_source.uris) == [f"{OUTPUT_DIR}/file-list.txt"]
    listed = images.get(f"{OUTPUT_DIR}/file-list.txt").decode().splitlines()
    assert listed == [IMAGES + "cats/a.jpg", IMAGES + "dogs/b.PNG"]  # JPEG/PNG only, any case
    assert job.output_config.predictions_format == "jsonl"
    assert job.output_config.gcs_destination.output_uri_prefix == OUTPUT_DIR
    resources = job.dedicated_resources
    assert resources.machine_spec.machine_type == "n1-standard-4"
    assert resources.machine_spec.accelerator_type.name == "NVIDIA_TESLA_T4"
    assert (resources.starting_replica_count, resources.max_replica_count) == (1, 3)
    assert job.unmanaged_container_model.artifact_uri == batch_props()["artifact_uri"]
    image = job.unmanaged_container_model.container_spec.image_uri
    assert image == "us-docker.pkg.dev/vertex-ai/prediction/tf2-gpu.2-15:latest"
    assert not job.model
    assert job.service_account == batch_props()["service_account"]
    assert job.labels[KEY_LABEL] == spec.job_key(
        spec.with_defaults(
            batch_props(accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1, max_replica_count=3)
        )
    )


def test_a_registry_model_is_named_in_full(fake_vertex, images, provider):
    create(provider, artifact_uri=None, model="vertex-training-dev@candidate")
    (job,) = batch_jobs(fake_vertex)
    assert job.model == f"{PARENT}/models/vertex-training-dev@candidate"
    assert "unmanaged_container_model" not in job


def test_success_outputs_and_run_record(fake_vertex, images, provider):
    fake_vertex.batch_successful, fake_vertex.batch_failed = 2, 1
    result = create(provider)
    outs = result.outs
    job_id = result.id.rsplit("/", 1)[-1]
    assert result.id.startswith(f"{PARENT}/batchPredictionJobs/")
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and outs["error"] == ""
    # As python-aiplatform's jobs.py names a BatchPredictionJob's page (_job_type "batch-predictions").
    assert outs["console_url"] == (
        f"https://console.cloud.google.com/agent-platform/locations/{REGION}/batch-predictions/{job_id}"
        f"?project={PROJECT}"
    )
    assert outs["predictions_dir"].startswith(f"{OUTPUT_DIR}/prediction-classify-held-back-")
    assert outs["completion_stats"] == {"successful_count": 2, "failed_count": 1, "incomplete_count": 0}
    assert outs["placement"]["machine_type"] == "n1-standard-4" and outs["placement"]["region"] == REGION
    assert [a["state"] for a in outs["attempts"]] == ["JOB_STATE_SUCCEEDED"]
    assert outs["images"] == IMAGES and outs["machine_type"] == "n1-standard-4"  # every input kept
    assert "estimated_cost_usd" not in outs  # no sourced price for prediction machines
    record = json.loads(images.get(f"{OUTPUT_DIR}/run.json"))
    assert record["kind"] == "batch_prediction_job"
    assert record["predictions_dir"] == outs["predictions_dir"]
    assert record["completion_stats"]["failed_count"] == 1


def test_a_stockout_moves_to_the_fallback_region(fake_vertex, images, provider, capsys):
    fake_vertex.capacity[(REGION, "n1-standard-4", "", "STANDARD")] = STOCKOUT
    result = create(provider, fallbacks=[{"region": "europe-west4"}])
    assert result.id.startswith("projects/demo-project/locations/europe-west4/batchPredictionJobs/")
    outs = result.outs
    assert [a["state"] for a in outs["attempts"]] == ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"]
    assert outs["placement"]["region"] == "europe-west4"
    assert "Resources are insufficient" in outs["attempts"][0]["reason"]
    assert "trying next" in capsys.readouterr().err


def test_every_shape_stocked_out_names_the_vertex_quotas_page_not_training_quotas(
    fake_vertex, images, provider
):
    fake_vertex.capacity[("n1-standard-4", "", "STANDARD")] = STOCKOUT
    with pytest.raises(JobError) as raised:
        create(provider, fallbacks=[{"machine_type": "n1-standard-4", "region": "europe-west4"}])
    message = str(raised.value)
    assert "Batch prediction classify-held-back could not get machines" in message
    assert "custom_model_training" not in message and "FLEX_START" not in message
    assert "batchPrediction.fallbacks" in message


def test_an_interrupted_create_is_adopted(fake_vertex, images, provider):
    job = spec.build_batch_job(spec.with_defaults(batch_props()))
    seeded = fake_vertex.add_job(PARENT, job, JobState.JOB_STATE_RUNNING)
    fake_vertex._advancing.add(seeded)
    result = create(provider)
    assert result.id == seeded
    assert len(batch_jobs(fake_vertex)) == 1
    assert result.outs["state"] == "JOB_STATE_SUCCEEDED"


def test_delete_cancels_a_running_job_then_deletes_it(fake_vertex, images, provider):
    fake_vertex.auto_advance = False
    result = create(provider, wait=False)
    name = result.id
    fake_vertex.set_state(name, JobState.JOB_STATE_RUNNING)
    provider.delete(name, result.outs)
    assert name not in fake_vertex.jobs
    assert [m for m, _ in fake_vertex.calls if "BatchPredictionJob" in m][-2:] == [
        "GetBatchPredictionJob",
        "DeleteBatchPredictionJob",
    ]
    assert any(m == "CancelBatchPredictionJob" for m, _ in fake_vertex.calls)


def test_a_job_that_runs_past_its_timeout_is_cancelled(fake_vertex, images, provider, monkeypatch):
    fake_vertex.auto_advance = False
    result = create(provider, wait=False)
    fake_vertex.set_state(result.id, JobState.JOB_STATE_RUNNING)
    job = fake_vertex.jobs[result.id]
    job.start_time = job.start_time.replace(year=job.start_time.year - 1)
    with pytest.raises(JobError, match="ran past timeout_seconds=3600 and was cancelled"):
        provider.update(result.id, result.outs, {**result.outs, "wait": True})
    assert fake_vertex.jobs[result.id].state == JobState.JOB_STATE_CANCELLED


def test_no_images_under_the_prefix_is_an_error_before_any_job(fake_vertex, fake_storage, provider):
    with pytest.raises(JobError, match="no JPEG or PNG files under images"):
        create(provider)
    assert not batch_jobs(fake_vertex)


@pytest.mark.parametrize(
    ("overrides", "key", "words"),
    [
        ({"artifact_uri": None}, "artifact_uri", "exactly one of model"),
        ({"model": "m"}, "model", "both are set"),
        ({"images": "/data/held-back"}, "images", "must be a gs:// prefix for the vertex runner"),
        ({"starting_replica_count": 0}, "starting_replica_count", "whole number >= 1"),
        ({"starting_replica_count": 3, "max_replica_count": 2}, "max_replica_count", "below"),
        ({"max_replica_count": 1.5}, "max_replica_count", "whole number"),
        ({"artifact_uri": None, "model": "m", "runner": "local", "output_dir": "/tmp/o"}, "model", "local"),
        (
            {"artifact_uri": None, "model": "projects/p/locations/europe-west4/models/m"},
            "model",
            "europe-west4",
        ),
        ({"artifact_uri": "/models/m"}, "artifact_uri", "gs://"),
        ({"output_dir": "/tmp/out"}, "output_dir", "gs://"),
        ({"accelerator_count": 1}, "accelerator_type", "not set"),
        ({"machine_type": "g2-standard-8"}, "accelerator_type", "comes with GPUs"),
        ({"fallbacks": [{"scheduling_strategy": "SPOT"}]}, "fallbacks[0]", "must be a map of"),
        (
            {"fallbacks": [{"accelerator_type": "NVIDIA_L4", "accelerator_count": 1}]},
            "fallbacks[0]",
            "cannot take",
        ),
        ({"labels": {KEY_LABEL: "x"}}, "labels", "reserved"),
        ({"timeout_seconds": 0}, "timeout_seconds", "positive"),
    ],
)
def test_check_refuses_naming_the_key(provider, overrides, key, words):
    failures = [(f.property, f.reason) for f in provider.check({}, batch_props(**overrides)).failures]
    assert any(p == key and words in reason for p, reason in failures), failures


def test_check_skips_unknown_preview_values(provider):
    from pulumi.output import Unknown

    props = batch_props(artifact_uri=Unknown(), images=Unknown(), output_dir=Unknown())
    assert provider.check({}, props).failures == []


def test_diff_replaces_on_what_the_job_computes_only(provider):
    olds = spec.with_defaults(batch_props())
    assert provider.diff("id", olds, batch_props(wait=False)).replaces == []
    assert provider.diff("id", olds, batch_props(fallbacks=[{"region": "europe-west4"}])).replaces == []
    assert provider.diff("id", olds, batch_props(images="gs://demo-bucket/other/")).replaces == ["images"]
