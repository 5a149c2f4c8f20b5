"""`make plan` and `make preflight` of one mind: whatever `pulumi up` would refuse, both say in the same
words, and both check that a batch prediction's images are there (a local folder offline; a gs:// prefix with
the caller's credentials, read from a fake of Cloud Storage's JSON API through google-cloud-storage)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from infra.plan.__main__ import main as plan_main
from infra.preflight.__main__ import main as preflight_main
from tests.fakes.storage import FakeStorage
from tests.preflight.conftest import STACK, Cloud
from tests.preflight.test_preflight import fixes, lines, no_credentials
from tests.stack.conftest import stack_values
from tests.vertex.conftest import fake_storage  # noqa: F401  (the fixture, by name)

ROOT = Path(__file__).resolve().parents[2]
IMAGES = "gs://pf-images/to-classify/"
# Batch prediction has no sourced price (its own SKUs), so the dev stack's maxCostUsd refuses it.
BATCH = {"images": IMAGES}


def plan_errors(root: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    assert plan_main(["--stack", STACK], root=root) == 1
    out = capsys.readouterr().out
    return [line.removeprefix("ERROR: ") for line in out.splitlines() if line.startswith("ERROR: ")]


def refusals(out: str) -> list[str]:
    return [line.split("pulumi up: ", 1)[1] for line in lines(out, "missing") if "pulumi up: " in line]


def test_what_plan_refuses_preflight_reports_in_the_same_words(
    cloud: Cloud,
    fake_storage: FakeStorage,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_storage.put(IMAGES + "cat.png", b"png")
    cloud.write_stack(batchPrediction=BATCH)
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    said = refusals(out)
    assert said and all(
        "would refuse predict: max_cost_usd: no shape of the chain" in line for line in said
    ), out
    assert "pulumi config set vertex-training:allowUnpricedShapes true --stack pf" in fixes(out)
    assert "ok           batch prediction images: 1 JPEG/PNG file(s) under gs://pf-images/to-classify/" in out
    assert plan_errors(cloud.root, capsys) == said


def test_without_credentials_the_refusal_is_still_said_and_nothing_comes_before_the_report(
    cloud: Cloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.write_stack(batchPrediction=BATCH)
    no_credentials(monkeypatch, tmp_path)
    assert cloud.preflight() == 1
    out, err = capsys.readouterr()
    assert err == "", err  # no `[pricing] Cloud Billing Catalog unreadable (DefaultCredentialsError ...)`
    assert out.splitlines()[0].startswith(f"Preflight of stack {STACK}")
    assert lines(out, "missing")[0] == "missing      credentials: no Application Default Credentials found"
    assert refusals(out) == plan_errors(cloud.root, capsys)


def test_an_empty_images_prefix_is_missing_with_the_upload_command(
    cloud: Cloud,
    fake_storage: FakeStorage,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    cloud.write_stack(batchPrediction={"images": IMAGES}, allowUnpricedShapes=True)
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    [line] = [line for line in lines(out, "missing") if "batch prediction images" in line]
    assert f"{IMAGES} holds no .jpg/.jpeg/.png files" in line
    assert f"gcloud storage cp <folder>/* {IMAGES}" in fixes(out)


@pytest.mark.parametrize("folder", ["empty", "missing"])
def test_a_local_images_folder_without_images_stops_plan_and_preflight_alike(
    folder: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    images = tmp_path / folder
    if folder == "empty":
        images.mkdir()
        (images / "notes.txt").write_text("not an image")
    values = stack_values("local", batchPrediction={"images": str(images)})
    (tmp_path / "Pulumi.local.yaml").write_text(yaml.safe_dump({"config": values}))
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    assert plan_main(["--stack", "local"], root=tmp_path) == 1
    planned = capsys.readouterr().out
    assert preflight_main(["--stack", "local"], root=tmp_path) == 1
    checked = capsys.readouterr().out
    state = "holds no .jpg/.jpeg/.png files" if folder == "empty" else "does not exist"
    problem = f"vertex-training:batchPrediction.images: {str(images)!r} ({images}) {state}"
    assert problem in planned and problem in checked, (planned, checked)
    assert "ready for `pulumi up`" not in checked
