"""The request and response bodies: `{"instances": [{"image_bytes": {"b64": ...}}, ...]}` in, one answer per
instance out, `{"predictions": [...]}` in instance order."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

# The instance's field: the name Google's prediction examples give an encoded image, and the name of the
# model's bytes input (trainer/export.py BYTES_INPUT). {"b64": ...} is how Google's prediction APIs carry
# binary data in JSON (TF Serving's REST API, "Encoding binary values", tensorflow.org/tfx/serving/api_rest,
# read 2026-11-22).
IMAGE_FIELD = "image_bytes"
EXAMPLE = '{"instances": [{"image_bytes": {"b64": "<base64 of a JPEG or PNG>"}}]}'


# An instance whose bytes the model's decode refuses gets this as its `error` (the others are classified).
UNREADABLE = "not an image the model can read (JPEG or PNG): the file is corrupt, truncated or another format"


class PayloadError(ValueError):
    """A request body the server cannot read: answered with 400 and this message."""


@dataclass(frozen=True)
class Answer:
    """One instance's prediction: classes most probable first, or why its image could not be read."""

    top_class: str
    classes: list[str]
    probabilities: list[float]
    error: str


def unreadable(reason: str) -> Answer:
    return Answer(top_class="", classes=[], probabilities=[], error=reason)


def _image(index: int, instance: object) -> bytes:
    where = f"instances[{index}]"
    if not isinstance(instance, dict) or IMAGE_FIELD not in instance:
        raise PayloadError(f"{where} has no {IMAGE_FIELD!r} field; each instance is like {EXAMPLE}")
    value = instance[IMAGE_FIELD]
    if not isinstance(value, dict) or not isinstance(value.get("b64"), str):
        raise PayloadError(f'{where}.{IMAGE_FIELD} is not {{"b64": "<base64 string>"}}')
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PayloadError(f"{where}.{IMAGE_FIELD}.b64 is not base64 ({exc})") from exc


def parse(body: bytes) -> list[bytes]:
    """The encoded images of a request body, in instance order; PayloadError names what is wrong."""
    try:
        request = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PayloadError(f"the body is not JSON ({exc}); send {EXAMPLE}") from exc
    if not isinstance(request, dict) or not isinstance(request.get("instances"), list):
        raise PayloadError(f'the body has no "instances" list; send {EXAMPLE}')
    return [_image(i, instance) for i, instance in enumerate(request["instances"])]


def response(answers: Sequence[Answer]) -> dict[str, list[dict[str, object]]]:
    """The response body: every answer's four fields, in instance order."""
    return {"predictions": [asdict(answer) for answer in answers]}
