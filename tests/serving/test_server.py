"""`python -m serving` as Vertex runs it (its environment, its routes) on the model the suite trains:
health 503 then 200, answers in instance order equal to trainer.predict's, a corrupt image failing alone,
bad payloads refused while it keeps serving, a batch of 64, SIGTERM."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from serving import client, settings

REPO = Path(__file__).resolve().parents[2]
# The routes Vertex gives a deployed model (custom-container-requirements, "AIP_HEALTH_ROUTE",
# "AIP_PREDICT_ROUTE": /v1/endpoints/ENDPOINT/deployedModels/DEPLOYED_MODEL[:predict]).
HEALTH = "/v1/endpoints/123/deployedModels/456"
PREDICT = HEALTH + ":predict"
# The shared model's classes (tests/conftest.py CLASSES, sorted: label order), each a generated photo whose
# ellipse has that label's colour (trainer.loaders.synthetic_image).
COLOURS = ("blue", "green", "red")
_rng = np.random.default_rng(29)


def image(colour: str, fmt: str = "PNG") -> bytes:
    """A new photo of the class, as the training images are made (a size the server resizes)."""
    from trainer.loaders import synthetic_image

    out = io.BytesIO()
    Image.fromarray(synthetic_image(_rng, COLOURS.index(colour), 40)).save(out, format=fmt, quality=95)
    return out.getvalue()


def get(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def post(url: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class Started:
    def __init__(self, model_dir: Path) -> None:
        self.port = client.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = client.server_env(str(model_dir), self.port)
        env.update({settings.HEALTH_ROUTE: HEALTH, settings.PREDICT_ROUTE: PREDICT})
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "serving", "--host", "127.0.0.1"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.statuses: list[int] = []  # every answer of the health route until the first 200
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and self.process.poll() is None:
            status = get(self.url + HEALTH)
            if status is not None:
                self.statuses.append(status)
            if status == 200:
                break
            time.sleep(0.05)
        self.healthy_after = time.monotonic() - self.started

    def predict(self, images: list[bytes]) -> tuple[int, dict]:
        return post(self.url + PREDICT, client.request_body(images))


@pytest.fixture(scope="module")
def server(trained: dict) -> Iterator[Started]:
    assert trained["rc"] == 0, trained["log"][-3000:]
    started = Started(trained["model_dir"])
    yield started
    if started.process.poll() is None:
        started.process.kill()
        started.process.wait()


def test_health_answers_503_while_the_model_loads_then_200(server: Started) -> None:
    assert server.statuses[-1] == 200, server.statuses
    # The port answered before the model was loaded: TensorFlow alone takes seconds to import.
    assert server.statuses[0] == 503, server.statuses[:5]


def test_answers_are_in_instance_order_and_agree_with_trainer_predict(
    server: Started, trained: dict, tmp_path: Path
) -> None:
    from trainer import predict

    colours = ["red", "blue", "green", "red"]
    encoded = [image(c, fmt) for c, fmt in zip(colours, ["PNG", "JPEG", "PNG", "JPEG"], strict=True)]
    status, body = server.predict(encoded)
    assert status == 200, body
    answers = body["predictions"]
    assert len(answers) == len(colours)
    for i, data in enumerate(encoded):
        (tmp_path / f"{i}.img").write_bytes(data)
    paths = [str(tmp_path / f"{i}.img") for i in range(len(encoded))]
    printed, errors = predict.predict(str(trained["model_dir"]), paths, top_k=3)
    assert not errors
    for answer, expected in zip(answers, printed, strict=True):
        assert answer["error"] == ""
        assert answer["classes"] == [name for name, _ in expected.classes]
        np.testing.assert_allclose(answer["probabilities"], [p for _, p in expected.classes], atol=1e-5)
        assert answer["top_class"] == answer["classes"][0]
        assert abs(sum(answer["probabilities"]) - 1) < 1e-4


def test_a_corrupt_image_fails_alone(server: Started) -> None:
    good = [image("green"), image("red", "JPEG"), image("blue")]
    alone = server.predict(good)[1]["predictions"]
    truncated = image("red", "JPEG")[:40]
    sent = [good[0], b"not an image", good[1], truncated, good[2], b"\x89PNG\r\n\x1a\n broken"]
    status, body = server.predict(sent)
    assert status == 200, body
    answers = body["predictions"]
    assert len(answers) == 6
    for bad in (answers[1], answers[3], answers[5]):
        assert bad["error"].startswith("not an image the model can read"), bad
        assert bad["top_class"] == "" and bad["classes"] == [] and bad["probabilities"] == []
    for answer, expected in zip([answers[0], answers[2], answers[4]], alone, strict=True):
        assert answer["classes"] == expected["classes"]
        np.testing.assert_allclose(answer["probabilities"], expected["probabilities"], atol=1e-6)


def test_an_empty_instances_list_gets_an_empty_predictions_list(server: Started) -> None:
    assert post(server.url + PREDICT, b'{"instances": []}') == (200, {"predictions": []})


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (b"{not json", "not JSON"),
        (b'{"instance": []}', '"instances" list'),
        (b'{"instances": {"image_bytes": 1}}', '"instances" list'),
        (b'{"instances": [{"b64": "aGk="}]}', "instances[0] has no 'image_bytes'"),
        (b'{"instances": [{"image_bytes": "aGk="}]}', 'instances[0].image_bytes is not {"b64"'),
        (b'{"instances": [{"image_bytes": {"b64": "%%%"}}]}', "instances[0].image_bytes.b64 is not base64"),
    ],
)
def test_a_bad_payload_gets_400_naming_the_problem_and_the_server_keeps_serving(
    server: Started, body: bytes, names: str
) -> None:
    status, answer = post(server.url + PREDICT, body)
    assert status == 400
    assert names in answer["error"]
    assert server.predict([image("red")])[0] == 200


def test_a_batch_of_64_instances_is_answered_whole(server: Started) -> None:
    """What Vertex batch prediction sends per request by default: the same answers, in the same order, as
    the same images sent 16 at a time."""
    encoded = [image(COLOURS[i % 3], "JPEG" if i % 2 else "PNG") for i in range(64)]
    status, body = server.predict(encoded)
    assert status == 200
    whole = body["predictions"]
    parts = [
        a for start in range(0, 64, 16) for a in server.predict(encoded[start : start + 16])[1]["predictions"]
    ]
    assert [a["classes"] for a in whole] == [a["classes"] for a in parts]
    for one, other in zip(whole, parts, strict=True):
        np.testing.assert_allclose(one["probabilities"], other["probabilities"], atol=1e-5)


def test_sigterm_stops_the_server_cleanly(server: Started) -> None:
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0
    assert server.process.stdout is not None
    log = server.process.stdout.read()
    assert "model loaded" in log, log[-2000:]
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.slow  # the server's loading thread imports TensorFlow
def test_a_folder_without_a_model_stops_the_server_naming_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "saved_model.pb").write_bytes(b"")
    env = client.server_env(str(tmp_path), client.free_port())
    done = subprocess.run(
        [sys.executable, "-m", "serving", "--host", "127.0.0.1"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "assets/class_names.txt is missing" in done.stderr
    assert "not a folder inside it" in done.stderr


def test_an_environment_without_a_model_uri_is_refused_at_once() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIP_")}
    done = subprocess.run(
        [sys.executable, "-m", "serving"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "AIP_STORAGE_URI is not set" in done.stderr
