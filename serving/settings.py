"""What the server reads from its environment: Vertex AI's custom-container variables, parsed once."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

# Vertex AI sets these in a custom prediction container ("Custom container requirements for prediction",
# cloud.google.com/vertex-ai/docs/predictions/custom-container-requirements, "Environment variables", read
# 2026-11-29): the port to listen on (8080 when the model sets no containerSpec.ports), the paths it sends
# health checks and prediction requests to, and a Cloud Storage copy of the model's artifactUri.
PORT, HEALTH_ROUTE, PREDICT_ROUTE, STORAGE_URI = (
    "AIP_HTTP_PORT",
    "AIP_HEALTH_ROUTE",
    "AIP_PREDICT_ROUTE",
    "AIP_STORAGE_URI",
)
DEFAULT_PORT = 8080
# Outside Vertex (make serve-local, a batch job run here) nothing sets the routes: these are used.
DEFAULT_HEALTH_ROUTE = "/health"
DEFAULT_PREDICT_ROUTE = "/predict"


class SettingsError(ValueError):
    """An environment the server cannot start with; the message names the variable and the fix."""


@dataclass(frozen=True)
class Settings:
    port: int
    health_route: str
    predict_route: str
    model_uri: str


def _route(env: Mapping[str, str], name: str, default: str) -> str:
    route = env.get(name) or default
    if not route.startswith("/"):
        raise SettingsError(f"{name}={route!r}: a route is a path starting with '/', e.g. {default}")
    return route


def from_env(env: Mapping[str, str] = os.environ) -> Settings:
    """The server's settings from Vertex's variables; an error names the variable that is wrong."""
    model_uri = env.get(STORAGE_URI, "").strip()
    if not model_uri:
        raise SettingsError(
            f"{STORAGE_URI} is not set: set it to the trainer's model directory (gs://... or a local "
            f"folder), e.g. {STORAGE_URI}=.local/stack-local/runs/<run>/model"
        )
    raw_port = env.get(PORT) or str(DEFAULT_PORT)
    if not raw_port.isdigit() or not 0 < int(raw_port) < 65536:
        raise SettingsError(f"{PORT}={raw_port!r}: a port is a number from 1 to 65535, e.g. {DEFAULT_PORT}")
    health = _route(env, HEALTH_ROUTE, DEFAULT_HEALTH_ROUTE)
    predict = _route(env, PREDICT_ROUTE, DEFAULT_PREDICT_ROUTE)
    if health == predict:
        raise SettingsError(
            f"{HEALTH_ROUTE} and {PREDICT_ROUTE} are both {health!r}: give them different paths"
        )
    return Settings(port=int(raw_port), health_route=health, predict_route=predict, model_uri=model_uri)
