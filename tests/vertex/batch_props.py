"""Batch prediction props for tests: a small valid job, with overrides."""

from typing import Any

from tests.vertex.props import PROJECT, REGION

IMAGES = "gs://demo-bucket/held-back/"
OUTPUT_DIR = "gs://demo-bucket/predictions/1"


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
        "artifact_uri": "gs://demo-bucket/runs/1/model/serving_bytes/",
        "images": IMAGES,
        "output_dir": OUTPUT_DIR,
        **overrides,
    }
    return {k: v for k, v in props.items() if v is not None}
