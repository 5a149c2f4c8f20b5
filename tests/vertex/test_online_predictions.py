"""`python -m infra.online_predictions`: images to the stack's deployed model through the real
PredictionServiceClient (fake PredictionService in front of the fake endpoints), printed as the batch
predictions' table; requests stay under Vertex's 1.5 MB payload limit."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra import online_predictions
from infra.dynamic.endpoints import EMULATOR_ENV
from infra.online_predictions import REQUEST_LIMIT_BYTES, Image, batches, main, request_size
from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.prediction_service import FakePredictionService
from tests.plan.conftest import write_stack
from tests.stack.conftest import stack_values

ENDPOINT = "projects/p/locations/us-central1/endpoints/42"


def serve(data: bytes) -> dict[str, Any]:
    """Stands in for the serving container: a 'dog' when the bytes start with D, else a 'cat'."""
    if not data.startswith((b"C", b"D")):
        return {"top_class": "", "classes": [], "probabilities": [], "error": "not an image"}
    first, second = ("dog", "cat") if data.startswith(b"D") else ("cat", "dog")
    return {"top_class": first, "classes": [first, second], "probabilities": [0.9, 0.1], "error": ""}


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePredictionService]:
    endpoints = FakeEndpointService()
    endpoints.operation_polls = 0
    endpoints.add_endpoint(ENDPOINT)
    endpoints.deploy_now(ENDPOINT, "projects/p/locations/us-central1/models/m@3")
    predictions = FakePredictionService(endpoints, serve)
    monkeypatch.setenv(EMULATOR_ENV, predictions.start(*endpoints.handlers()))
    yield predictions
    predictions.stop()


def test_a_folder_and_a_file_are_classified_in_one_table(fakes, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(b"C" * 100)
    (folder / "b.png").write_bytes(b"D" * 100)
    (folder / "notes.txt").write_text("not an image")
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"x")
    code = main(["--endpoint", ENDPOINT, str(folder), str(broken)])
    out = capsys.readouterr()
    assert code == 1  # one image failed
    lines = out.out.splitlines()
    assert lines[0].split() == ["IMAGE", "CLASS", "PROBABILITY", "ERROR"]
    assert lines[1].split() == [str(folder / "a.jpg"), "cat", "0.9000"]
    assert lines[2].split() == [str(folder / "b.png"), "dog", "0.9000"]
    assert lines[3].startswith(str(broken)) and lines[3].endswith("not an image")
    assert "2 images classified, 1 failed" in out.err
    (request,) = [r for m, r in fakes.calls if m == "Predict"]  # one request: all three fit
    assert request.endpoint == ENDPOINT and len(request.instances) == 3


def test_csv_with_every_class(fakes, tmp_path: Path, capsys) -> None:
    image = tmp_path / "a.jpg"
    image.write_bytes(b"C")
    assert main(["--endpoint", ENDPOINT, "--csv", "--all-classes", str(image)]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [
        ["image", "class", "probability", "error"],
        [str(image), "cat", "0.9000", ""],
        [str(image), "dog", "0.1000", ""],
    ]


def test_requests_stay_under_the_payload_limit_and_a_too_large_image_is_not_sent(
    fakes, tmp_path: Path, capsys
) -> None:
    big = [Image(f"i{n}.jpg", b"C" * 400_000) for n in range(4)]  # ~533 kB each in base64
    sizes = [request_size(ENDPOINT, batch) for batch in batches(ENDPOINT, big)]
    assert len(sizes) == 2 and all(size <= REQUEST_LIMIT_BYTES for size in sizes)
    huge = tmp_path / "huge.jpg"
    huge.write_bytes(b"C" * 1_200_000)
    small = tmp_path / "small.jpg"
    small.write_bytes(b"D")
    assert main(["--endpoint", ENDPOINT, str(huge), str(small)]) == 1
    out = capsys.readouterr().out
    assert "too large for one request (Vertex's limit is 1.5 MB" in out
    sent = [r for m, r in fakes.calls if m == "Predict"]
    assert [len(r.instances) for r in sent] == [1]  # only the small one went


def test_the_stacks_endpoint_is_found_from_its_file(fakes, tmp_path: Path, monkeypatch, capsys) -> None:
    endpoint = {"machineType": "n1-standard-2"}
    values = stack_values("prod", endpoint=endpoint)
    root = write_stack(tmp_path, "prod", values)
    name = online_predictions.stack_endpoint("prod", root)
    assert name.startswith("projects/acme-vt-prod/locations/us-central1/endpoints/")
    # No endpoint key: said, exit 2.
    write_stack(tmp_path, "dev", stack_values("dev"))
    image = tmp_path / "a.jpg"
    image.write_bytes(b"C")
    assert main(["--stack", "dev", str(image)], root=tmp_path) == 2
    assert "sets no vertex-training:endpoint" in capsys.readouterr().err
