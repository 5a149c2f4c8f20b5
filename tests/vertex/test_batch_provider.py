"""BatchPredictionProvider against the fake JobService, through the real JobServiceClient and the shared
lifecycle: the request, the outputs and run.json, fallbacks, adoption, cancel/delete and check refusals."""

import base64
import datetime
import json

import pytest
from google.cloud import aiplatform_v1

from infra import predictions as predictions_command
from infra.vertex.batch import machines, spec
from infra.vertex.batch_provider import BatchPredictionProvider
from infra.vertex.cost import pricing
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.outcome import Outcome
from tests.fakes.vertex import STOCKOUT
from tests.vertex.batch_props import IMAGES, MODEL_DIR, OUTPUT_DIR, SERVING_IMAGE, batch_props, put_model
from tests.vertex.props import PROJECT, REGION, batch_job_request, placed

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
    put_model(fake_storage)
    return fake_storage


def create(provider, **overrides):
    checked = provider.check({}, batch_props(**overrides))
    assert not checked.failures, [(f.property, f.reason) for f in checked.failures]
    return provider.create(checked.inputs)


def batch_jobs(fake):
    return [job for job in fake.jobs.values() if isinstance(job, aiplatform_v1.BatchPredictionJob)]


def test_the_request_feeds_keyed_images_to_the_stacks_serving_image(fake_vertex, images, provider):
    images.put(IMAGES + "dogs/c.png", b"\x89PNG other bytes")
    create(provider, accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1, max_replica_count=3)
    (job,) = batch_jobs(fake_vertex)
    assert job.input_config.instances_format == "jsonl"
    assert list(job.input_config.gcs_source.uris) == [f"{OUTPUT_DIR}/instances.jsonl"]
    lines = [json.loads(line) for line in images.get(f"{OUTPUT_DIR}/instances.jsonl").decode().splitlines()]
    # JPEG/PNG only, any case; each line: the image's URI as the key, its own bytes as {"b64": ...}.
    assert [line["key"] for line in lines] == [
        IMAGES + "cats/a.jpg",
        IMAGES + "dogs/b.PNG",
        IMAGES + "dogs/c.png",
    ]
    assert [base64.b64decode(line["image_bytes"]["b64"]) for line in lines] == [
        b"bytes",
        b"bytes",
        b"\x89PNG other bytes",
    ]
    # key_field: the key is not sent to the model and each output line carries it instead of the instance
    # (no image bytes in the output). Nothing excluded: an excluded field is not sent to the model, which
    # needs the bytes (aiplatform_v1 BatchPredictionJob.InstanceConfig).
    config = job.instance_config
    assert (config.instance_type, config.key_field) == ("object", "key")
    assert list(config.excluded_fields) == [] and list(config.included_fields) == []
    assert set(lines[0]) - {config.key_field} == {"image_bytes"}  # what the model is sent: its one input
    assert job.output_config.predictions_format == "jsonl"
    assert job.output_config.gcs_destination.output_uri_prefix == OUTPUT_DIR
    resources = job.dedicated_resources
    assert resources.machine_spec.machine_type == "n1-standard-4"
    assert resources.machine_spec.accelerator_type.name == "NVIDIA_TESLA_T4"
    assert (resources.starting_replica_count, resources.max_replica_count) == (1, 3)
    assert job.unmanaged_container_model.artifact_uri == batch_props()["artifact_uri"]
    container = job.unmanaged_container_model.container_spec
    assert container.image_uri == SERVING_IMAGE  # one image for CPU and GPU machines
    assert [p.container_port for p in container.ports] == [8080]
    assert (container.health_route, container.predict_route) == ("/health", "/predict")
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


def test_a_stockout_moves_to_the_fallback_machine(fake_vertex, images, provider, capsys):
    fake_vertex.capacity[(REGION, "n1-standard-4", "", "STANDARD")] = STOCKOUT
    result = create(provider, fallbacks=[{"machine_type": "n1-highmem-8", "region": REGION}])
    assert result.id.startswith(f"{PARENT}/batchPredictionJobs/")
    outs = result.outs
    assert [a["state"] for a in outs["attempts"]] == ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"]
    assert outs["placement"]["machine_type"] == "n1-highmem-8" and outs["placement"]["region"] == REGION
    assert "Resources are insufficient" in outs["attempts"][0]["reason"]
    assert "trying next" in capsys.readouterr().err


def test_a_fallback_region_is_refused_at_check_with_the_reason(provider):
    """Google requires a batch prediction's input and output in its model's region; they are in the home
    region's bucket, so a fallback in another region could only fail or read across regions."""
    failures = provider.check({}, batch_props(fallbacks=[{"region": "europe-west4"}])).failures
    (failure,) = failures
    assert failure.property == "fallbacks[0].region"
    assert "same region as its model" in failure.reason and machines.SAME_REGION_DOC in failure.reason
    assert "Drop the region from this fallback" in failure.reason


def test_every_shape_stocked_out_names_the_vertex_quotas_page_not_training_quotas(
    fake_vertex, images, provider
):
    fake_vertex.capacity[("n1-standard-4", "", "STANDARD")] = STOCKOUT
    fake_vertex.capacity[("n1-highmem-8", "", "STANDARD")] = STOCKOUT
    with pytest.raises(JobError) as raised:
        create(provider, fallbacks=[{"machine_type": "n1-highmem-8"}])
    message = str(raised.value)
    assert "Batch prediction classify-held-back could not get machines" in message
    assert "custom_model_training" not in message and "FLEX_START" not in message
    assert "batchPrediction.fallbacks" in message


def test_an_interrupted_create_is_adopted(fake_vertex, images, provider):
    job = batch_job_request(spec.with_defaults(batch_props()))
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
    put_model(fake_storage)
    with pytest.raises(JobError, match="no JPEG or PNG files under images"):
        create(provider)
    assert not batch_jobs(fake_vertex)


def test_a_model_dir_the_server_cannot_serve_is_an_error_before_any_job(fake_vertex, images, provider):
    """A folder inside the model dir: the error names the files it lacks and what to pass instead."""
    with pytest.raises(JobError) as raised:
        create(provider, artifact_uri=MODEL_DIR + "variables/")
    message = str(raised.value)
    assert "saved_model.pb, assets/class_names.txt are missing" in message and "model_dir output" in message
    assert not batch_jobs(fake_vertex)


@pytest.mark.parametrize(
    ("overrides", "key", "words"),
    [
        ({"artifact_uri": None}, "artifact_uri", "exactly one of model"),
        ({"serving_image": None}, "serving_image", "is required with it"),
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
    assert provider.diff("id", olds, batch_props(fallbacks=[{"machine_type": "n1-highmem-8"}])).replaces == []
    assert provider.diff("id", olds, batch_props(images="gs://demo-bucket/other/")).replaces == ["images"]


def vertex_lines(images_ok: list[str], unreadable: list[str]) -> str:
    """Result lines as Vertex writes them with key_field for the exported model's batch signature."""
    lines = [
        {
            "key": key,
            "prediction": {
                "top_class": "dogs",
                "classes": ["dogs", "cats"],
                "probabilities": [0.9, 0.1],
                "error": "",
            },
        }
        for key in images_ok
    ] + [
        {
            "key": key,
            "prediction": {
                "top_class": "",
                "classes": ["", ""],
                "probabilities": [0, 0],
                "error": "unreadable",
            },
        }
        for key in unreadable
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_images_the_model_could_not_read_count_as_failed(fake_vertex, images, provider, capsys):
    """Vertex counts an answered instance as successful; an image whose answer is an `error` is failed to the
    user: the counts are read from the job's own result files."""
    fake_vertex.batch_successful, fake_vertex.batch_failed = 3, 1
    written = {
        "prediction.results-00000-of-00002": vertex_lines([IMAGES + "cats/a.jpg"], [IMAGES + "bad.jpg"]),
        "prediction.results-00001-of-00002": vertex_lines([IMAGES + "dogs/b.PNG"], []),
        "prediction.errors_stats-00000-of-00001": json.dumps(
            {"key": IMAGES + "x.png", "error": {"code": 3, "message": "request failed"}}
        )
        + "\n",
    }
    fake_vertex.batch_writes = lambda where: [
        images.put(f"{where}/{name}", text.encode()) for name, text in written.items()
    ]
    outs = create(provider).outs
    assert outs["completion_stats"] == {"successful_count": 2, "failed_count": 2, "incomplete_count": 0}
    assert "2 images classified, 2 failed, 0 incomplete" in capsys.readouterr().err

    # The table command reads the same files from Cloud Storage (the output_dir: its newest prediction-*).
    assert predictions_command.main([OUTPUT_DIR, "--csv"]) == 0
    out = capsys.readouterr()
    rows = out.out.splitlines()
    assert rows[0] == "image,class,probability,error"
    assert sorted(rows[1:]) == sorted(
        [
            f"{IMAGES}cats/a.jpg,dogs,0.9000,",
            f"{IMAGES}dogs/b.PNG,dogs,0.9000,",
            f"{IMAGES}bad.jpg,,,unreadable",
            f"{IMAGES}x.png,,,request failed",
        ]
    )
    assert "2 images classified, 2 failed" in out.err


# A figure for these tests only (no prediction price has a source: pricing.PREDICTION_TABLE is empty): it
# proves the mechanism that a sourced row will drive, and is never shown to a user.
TEST_NODE_HOUR_USD = 1.0


def test_the_cap_cancels_a_batch_job_at_its_prediction_price(fake_vertex, images, provider, monkeypatch):
    monkeypatch.setitem(pricing.PREDICTION_TABLE, REGION, {"n1-standard-4": TEST_NODE_HOUR_USD})
    fake_vertex.auto_advance = False
    job = batch_job_request(spec.with_defaults(batch_props(max_replica_count=2)))
    name = fake_vertex.add_job(PARENT, job, JobState.JOB_STATE_RUNNING)
    fake_vertex.jobs[name].start_time = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1800)
    # Two replicas at most: USD 2 an hour; half an hour has run, the cap is a quarter hour's worth.
    outs = create(provider, max_replica_count=2, max_cost_usd=0.5).outs
    assert outs["state"] == "JOB_STATE_CANCELLED" and outs["cost_cap_reached"] is True
    assert outs["estimated_cost_usd"] >= 1.0 - 1e-3
    assert "reached max_cost_usd" in outs["error"] and f"stays under {OUTPUT_DIR}" in outs["error"]
    assert "checkpoints" not in outs["error"]
    assert "CancelBatchPredictionJob" in [method for method, _ in fake_vertex.calls]


def test_without_a_sourced_price_the_cap_is_not_enforced_and_check_says_so(fake_vertex, provider, capsys):
    assert pricing.PREDICTION_TABLE == {}  # no sourced figure: nothing may price a prediction machine
    refused = provider.check({}, batch_props(max_cost_usd=1)).failures  # limits.py: unpriced, not run
    assert refused and "allowUnpricedShapes: true" in refused[0].reason
    provider.check({}, batch_props(max_cost_usd=1, allow_unpriced_shapes=True))
    err = capsys.readouterr().err
    assert "n1-standard-4 (us-central1, batch prediction: no sourced price)" in err
    assert "WARNING" in err and "max_cost_usd USD 1.00 is not enforced" in err


RESERVATION = f"projects/{PROJECT}/zones/{REGION}-a/reservations/predict-t4"


def test_a_reservation_is_in_the_machine_spec_and_a_fallback_on_other_machines_drops_it(
    fake_vertex, images, provider
):
    """MachineSpec.reservation_affinity ("Optional. Immutable.") is accepted for batch; a reservation
    matches one exact machine configuration, so a fallback on other machines does not inherit it."""
    fake_vertex.capacity[(REGION, "n1-standard-4", "", "STANDARD")] = STOCKOUT
    affinity = {"type": "SPECIFIC_RESERVATION", "reservation": RESERVATION}
    create(provider, reservation_affinity=affinity, fallbacks=[{"machine_type": "n1-highmem-8"}])
    first, second = sorted(batch_jobs(fake_vertex), key=lambda job: job.name)
    reserved = first.dedicated_resources.machine_spec.reservation_affinity
    assert reserved.reservation_affinity_type.name == "SPECIFIC_RESERVATION"
    assert (reserved.key, list(reserved.values)) == ("compute.googleapis.com/reservation-name", [RESERVATION])
    assert "reservation_affinity" not in second.dedicated_resources.machine_spec


@pytest.mark.parametrize(
    ("affinity", "words"),
    [
        ({"type": "SOMETIMES"}, "type must be one of"),
        ({"type": "SPECIFIC_RESERVATION", "reservation": "predict-t4"}, "full name"),
        (
            {"type": "SPECIFIC_RESERVATION", "reservation": "projects/p/zones/europe-west4-a/reservations/r"},
            "not in the shape's region",
        ),
    ],
)
def test_a_bad_reservation_is_refused_at_check(provider, affinity, words):
    failures = provider.check({}, batch_props(reservation_affinity=affinity)).failures
    assert [f.property for f in failures] == ["reservation_affinity"] and words in failures[0].reason


def test_an_unknown_incomplete_count_is_said_so(provider):
    outs = {
        "state": "JOB_STATE_FAILED",
        "duration_seconds": 60,
        "predictions_dir": "gs://b/p",
        "completion_stats": {"successful_count": 0, "failed_count": 0, "incomplete_count": -1},
    }
    on_shape = placed(batch_props(), provider.kind)
    assert "0 failed, an unknown number incomplete" in provider.kind.summary(
        Outcome.stored(outs, provider.kind), on_shape
    )


def test_a_reserved_batch_job_ends_with_no_figure_where_an_unreserved_one_has_one(
    fake_vertex, images, provider, monkeypatch, capsys
):
    """A machine that may take a reservation is billed at Compute Engine's prices plus a fee, not at
    prediction prices: the job's outputs, refresh and closing line give no figure, though its machine has
    a prediction price (the reservation is read back from the job's MachineSpec)."""
    monkeypatch.setitem(pricing.PREDICTION_TABLE, REGION, {"n1-standard-4": TEST_NODE_HOUR_USD})
    assert "estimated_cost_usd" in create(provider).outs
    created = create(provider, reservation_affinity={"type": "ANY_RESERVATION"}, display_name="reserved")
    assert "estimated_cost_usd" not in created.outs
    assert created.outs["placement"]["reservation_affinity"] == {"type": "ANY_RESERVATION"}
    assert "no cost estimate" in capsys.readouterr().err
    read = provider.read(created.id, created.outs).outs
    assert "estimated_cost_usd" not in read and read["placement"] == created.outs["placement"]
