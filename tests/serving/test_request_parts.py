"""The server's settings and payloads, parsed once at the boundary: every mistake named with its fix."""

from __future__ import annotations

import base64
import json

import pytest

from serving import payload, settings


def test_vertex_variables_are_read() -> None:
    got = settings.from_env(
        {
            "AIP_HTTP_PORT": "9000",
            "AIP_HEALTH_ROUTE": "/v1/endpoints/1/deployedModels/2",
            "AIP_PREDICT_ROUTE": "/v1/endpoints/1/deployedModels/2:predict",
            "AIP_STORAGE_URI": "gs://b/model",
        }
    )
    assert got == settings.Settings(
        9000, "/v1/endpoints/1/deployedModels/2", "/v1/endpoints/1/deployedModels/2:predict", "gs://b/model"
    )


def test_outside_vertex_the_defaults_apply() -> None:
    got = settings.from_env({"AIP_STORAGE_URI": "model"})
    assert (got.port, got.health_route, got.predict_route) == (8080, "/health", "/predict")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "AIP_STORAGE_URI is not set"),
        ({"AIP_STORAGE_URI": "m", "AIP_HTTP_PORT": "http"}, "AIP_HTTP_PORT='http': a port is a number"),
        ({"AIP_STORAGE_URI": "m", "AIP_HTTP_PORT": "70000"}, "from 1 to 65535"),
        ({"AIP_STORAGE_URI": "m", "AIP_PREDICT_ROUTE": "predict"}, "starting with '/'"),
        ({"AIP_STORAGE_URI": "m", "AIP_PREDICT_ROUTE": "/health"}, "give them different paths"),
    ],
)
def test_a_bad_environment_names_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(settings.SettingsError, match=message.replace("(", r"\(")):
        settings.from_env(env)


def test_images_come_out_in_instance_order() -> None:
    images = [b"\x89PNG one", b"\xff\xd8 two"]
    body = json.dumps(
        {"instances": [{"image_bytes": {"b64": base64.b64encode(i).decode()}} for i in images]}
    ).encode()
    assert payload.parse(body) == images


def test_the_response_keeps_the_four_fields_in_order() -> None:
    answers = [payload.Answer("a", ["a", "b"], [0.75, 0.25], ""), payload.unreadable("bad")]
    assert payload.response(answers) == {
        "predictions": [
            {"top_class": "a", "classes": ["a", "b"], "probabilities": [0.75, 0.25], "error": ""},
            {"top_class": "", "classes": [], "probabilities": [], "error": "bad"},
        ]
    }
