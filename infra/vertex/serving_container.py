"""The container Vertex runs a model in (a Model Registry version, a batch job's unmanaged model): the stack's
serving image (serving/, `python -m serving`), and whether the server could load a model directory."""

from __future__ import annotations

from google.cloud import aiplatform_v1

from infra.vertex.lifecycle import output_files
from serving import model_files, settings


def container_spec(image_uri: str) -> aiplatform_v1.ModelContainerSpec:
    # Vertex sends health checks and predictions to the first port and these routes, and tells the server so
    # in AIP_HTTP_PORT, AIP_HEALTH_ROUTE and AIP_PREDICT_ROUTE (aiplatform_v1 ModelContainerSpec: ports,
    # predict_route, health_route, "Immutable."; read 2026-11-29).
    return aiplatform_v1.ModelContainerSpec(
        image_uri=image_uri,
        ports=[aiplatform_v1.Port(container_port=settings.DEFAULT_PORT)],
        predict_route=settings.DEFAULT_PREDICT_ROUTE,
        health_route=settings.DEFAULT_HEALTH_ROUTE,
    )


def unservable(model_dir: str) -> str | None:
    """Why the server could not serve `model_dir` (gs:// or local), naming the missing files, or None."""
    missing = output_files.missing_files(model_dir, model_files.REQUIRED_FILES)
    return model_files.missing_files_message(model_dir, missing) if missing else None
