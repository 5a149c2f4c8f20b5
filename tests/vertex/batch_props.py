"""Batch prediction props for tests: a small valid job, with overrides."""

from typing import Any

from serving import model_files
from tests.vertex.props import PROJECT, REGION

IMAGES = "gs://demo-bucket/held-back/"
OUTPUT_DIR = "gs://demo-bucket/predictions/1"
MODEL_DIR = "gs://demo-bucket/runs/1/model/"  # the training job's model_dir, as the trainer exports it
SERVING_IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/vertex-training-dev/serving@sha256:" + "5" * 64


def batch_props(**overrides: Any) -> dict[str, Any]:
    props = {
        "project": PROJECT,
        "region": REGION,
        "display_name": "classify-held-back",
        "labels": {"managed-by": "pulumi", "pulumi_stack": "dev"},
        "service_account": f"trainer@{PROJECT}.iam.gserviceaccount.com",
        "runner": "vertex",
        "wait": True,
        "poll_interval_seconds": 0.01,
        "timeout_seconds": 3600,
        "machine_type": "n1-standard-4",
        "artifact_uri": MODEL_DIR,
        "serving_image": SERVING_IMAGE,
        "images": IMAGES,
        "output_dir": OUTPUT_DIR,
        **overrides,
    }
    return {k: v for k, v in props.items() if v is not None}


def put_model(storage: Any, model_dir: str = MODEL_DIR) -> None:
    """What the trainer exports into a model dir, as far as the prediction server checks it."""
    for name in model_files.REQUIRED_FILES:
        storage.put(model_dir.rstrip("/") + "/" + name, b"exported")
