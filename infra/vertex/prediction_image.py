"""The prebuilt TensorFlow prediction container Vertex runs a SavedModel in: the Model Registry version's
serving image and a batch prediction's unmanaged container model use the same one."""

from __future__ import annotations

# Vertex's newest prebuilt TensorFlow prediction container is 2.15 (CPU and GPU), though the trainer exports
# with TensorFlow 2.21 (trainer/Dockerfile): "Prebuilt containers for inference and explanation",
# https://cloud.google.com/vertex-ai/docs/predictions/pre-built-containers (read 2026-11-22; 2.15 is listed
# with end of availability Jan 14, 2027). Only images with the `latest` tag are supported there.
PREDICTION_TF_VERSION = "2-15"
# The image is in three multi-region repositories; a region outside them uses `us`.
_IMAGE_REPOSITORIES = ("us", "europe", "asia")


def prediction_image(region: str, accelerated: bool = False) -> str:
    """The prebuilt TensorFlow prediction container nearest the region (see PREDICTION_TF_VERSION)."""
    prefix = region.split("-", 1)[0]
    repository = prefix if prefix in _IMAGE_REPOSITORIES else "us"
    kind = "gpu" if accelerated else "cpu"
    return f"{repository}-docker.pkg.dev/vertex-ai/prediction/tf2-{kind}.{PREDICTION_TF_VERSION}:latest"
