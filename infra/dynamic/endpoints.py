"""Where Google API clients connect: their regional endpoint, or the emulator in VERTEX_AI_EMULATOR_HOST."""

from __future__ import annotations

import os
from typing import Any

import grpc
from google.api_core.client_options import ClientOptions

EMULATOR_ENV = "VERTEX_AI_EMULATOR_HOST"


def vertex_endpoint(region: str) -> str:
    """Vertex AI's regional API endpoint (infra/guard/live_jobs.py writes its own: it imports no infra)."""
    return f"{region}-aiplatform.googleapis.com"


def client_kwargs(
    transport_class: Any, api_endpoint: str, quota_project: str | None = None
) -> dict[str, Any]:
    """Keyword arguments for a generated client: plain gRPC to the emulator, else `api_endpoint` with ADC.

    `quota_project`: the project that client-based APIs bill a call to (sent as x-goog-user-project).
    """
    emulator = os.environ.get(EMULATOR_ENV)
    if emulator:
        return {"transport": transport_class(channel=grpc.insecure_channel(emulator))}
    return {"client_options": ClientOptions(api_endpoint=api_endpoint, quota_project_id=quota_project)}
