"""vertex-training:batchPrediction: after training (and registration), the trained model classifies the
stack's images as a BatchPredictionJob; absent, no job. The local stack classifies its held-back images."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.components import image
from infra.config import ConfigError
from infra.vertex.batch.resource import RESOURCE_TYPE as BATCH
from infra.vertex.model.resource import RESOURCE_TYPE as MODEL_VERSION
from tests.stack.conftest import cached_run, run_stack, stack_config

ROOT = Path(__file__).resolve().parents[2]
IMAGES = "gs://my-bucket/to-classify/"


def test_the_local_stack_classifies_its_held_back_images_with_the_trained_model() -> None:
    run = cached_run("local")
    batch, train = run.one(BATCH), run.named("train")
    assert train.urn in batch.dependencies
    inputs = batch.inputs
    assert inputs["runner"] == "local"
    assert inputs["images"] == str(ROOT / "examples" / "held-back")
    assert len(list((ROOT / "examples" / "held-back").glob("*.png"))) == 4
    # The trainer's model dir itself, served by serving/ from this checkout (its content tag names it).
    assert inputs["artifact_uri"] == train.inputs["base_output_dir"] + "/model/"
    assert inputs["serving_image"] == f"local:{image.serving_tag()}"
    assert inputs["output_dir"].startswith(str(ROOT / ".local/stack-local/predictions/"))
    assert inputs["timeout_seconds"] == 1800  # the stack's timeoutSeconds by default
    assert "predictions_dir" in run.outputs


def test_a_cloud_stack_runs_it_after_registration_on_the_bucket() -> None:
    run = run_stack(
        "prod",
        batchPrediction={
            "images": IMAGES,
            "machineType": "n1-standard-8",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": 1,
            "startingReplicaCount": 1,
            "maxReplicaCount": 3,
            "fallbacks": [{"machineType": "n1-highmem-8"}],
            "timeoutSeconds": 7200,
            "reservationAffinity": {"type": "ANY_RESERVATION"},
        },
    )
    batch, model, train = run.one(BATCH), run.one(MODEL_VERSION), run.named("train")
    assert {train.urn, model.urn} <= set(batch.dependencies)
    inputs = batch.inputs
    assert inputs["images"] == IMAGES and inputs["runner"] == "vertex"
    assert (inputs["machine_type"], inputs["accelerator_type"], inputs["accelerator_count"]) == (
        "n1-standard-8",
        "NVIDIA_TESLA_T4",
        1,
    )
    assert (inputs["starting_replica_count"], inputs["max_replica_count"]) == (1, 3)
    assert inputs["fallbacks"] == [{"machine_type": "n1-highmem-8"}] and inputs["timeout_seconds"] == 7200
    assert inputs["reservation_affinity"] == {"type": "ANY_RESERVATION"}
    assert inputs["output_dir"].startswith(f"gs://{stack_config('prod').bucket_name}/predictions/")
    assert inputs["service_account"] == train.inputs["service_account"]
    assert inputs["labels"]["pulumi_stack"] == "prod"


@pytest.mark.parametrize("stack", ["dev", "cassava", "prod"])
def test_absent_means_no_job(stack: str) -> None:
    run = cached_run(stack)
    assert run.by_type(BATCH) == []
    assert run.outputs["predictions_dir"] == ""


@pytest.mark.parametrize(
    ("value", "key", "words"),
    [
        ("gs://x/", "batchPrediction", "must be a map"),
        ({"machineType": "n1-standard-4"}, "batchPrediction.images", "is required"),
        ({"images": IMAGES, "replicas": 2}, "batchPrediction", "unknown keys ['replicas']"),
        ({"images": "/data/images"}, "batchPrediction.images", "gs:// prefix"),
        ({"images": IMAGES, "maxReplicaCount": 0}, "batchPrediction.maxReplicaCount", "whole number >= 1"),
        (
            {"images": IMAGES, "startingReplicaCount": 3, "maxReplicaCount": 2},
            "batchPrediction.maxReplicaCount",
            "below starting_replica_count",
        ),
        ({"images": IMAGES, "acceleratorCount": 1}, "batchPrediction.acceleratorType", "not set"),
        (
            {"images": IMAGES, "fallbacks": [{"spot": True}]},
            "batchPrediction.fallbacks[0]",
            "must be a map of",
        ),
        (
            {"images": IMAGES, "reservationAffinity": {"type": "SOMETIMES"}},
            "batchPrediction.reservationAffinity",
            "type must be one of",
        ),
        (
            {"images": IMAGES, "fallbacks": [{"region": "europe-west4"}]},
            "batchPrediction.fallbacks[0].region",
            "must be in the same region as its model",
        ),
        # Both stopped the program with a bare ValueError before the rules ran on typed shapes.
        (
            {"images": IMAGES, "reservationAffinity": "ANY"},
            "batchPrediction.reservationAffinity",
            "must be a map",
        ),
        (
            {"images": IMAGES, "fallbacks": [{"acceleratorCount": "x"}]},
            "batchPrediction.fallbacks[0]",
            "accelerator_count must be a whole number >= 0",
        ),
        ({"images": IMAGES, "timeoutSeconds": -1}, "batchPrediction.timeoutSeconds", "positive number"),
    ],
)
def test_config_errors_name_the_key(value: object, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as raised:
        stack_config("dev", batchPrediction=value)
    assert raised.value.key == key and words in raised.value.problem, str(raised.value)
