"""`python -m infra.plan`: what `pulumi up` would create and what its jobs may cost, offline, for committed
stacks; every resource comes from the program itself, checked against the tests' own mock harness."""

from __future__ import annotations

import json

import pytest

from infra.plan.__main__ import main
from infra.stack import build
from infra.vertex.cost import pricing
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB
from tests.fakes.pulumi_mocks import run_program
from tests.plan.conftest import dev_with, write_stack
from tests.stack.conftest import ROOT, stack_config

PRICES = pricing.TABLE[("us-central1", "STANDARD")]
T4_SHAPE = PRICES["n1-standard-4"] + PRICES["NVIDIA_TESLA_T4"]
SHAPE_KEYS = {
    "machine_type",
    "accelerator_type",
    "accelerator_count",
    "scheduling_strategy",
    "region",
    "hourly_usd",
    "hourly_usd_is_on_demand_bound",
    "skipped",
}


def plan_json(capsys: pytest.CaptureFixture[str], stack: str, root=ROOT) -> tuple[int, dict]:
    code = main(["--stack", stack, "--json"], root=root)
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(autouse=True)
def no_catalog_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan is made offline: a Billing Catalog call would fail the test."""

    def refuse(project: str | None) -> list:
        raise AssertionError("the plan read the Cloud Billing Catalog")

    monkeypatch.setattr(pricing, "list_vertex_skus", refuse)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_json_lists_what_the_program_declares(capsys, stack):
    code, plan = plan_json(capsys, stack)
    assert code == 0
    assert set(plan) >= {"stack", "project", "resources", "jobs", "worst_case_usd"}
    assert (plan["stack"], plan["project"]) == (stack, f"my-training-{stack}")
    # The resources the program registers under the tests' own mock harness, by type and name.
    run = run_program(lambda: build(stack_config(stack)), stack=stack, preview=True)
    assert plan["resources"] == [
        {"type": t, "name": n} for t, n in sorted((r.type, r.name) for r in run.resources)
    ]
    assert [job["name"] for job in plan["jobs"]] == [r.name for r in run.by_type(CUSTOM_JOB)]
    for job in plan["jobs"]:
        assert all(set(shape) == SHAPE_KEYS for shape in job["shapes"]), job


def test_dev_json_prices_each_shape_in_order(capsys):
    _, plan = plan_json(capsys, "dev")
    data, train = plan["jobs"]
    assert [(s["machine_type"], s["scheduling_strategy"]) for s in data["shapes"]] == [
        ("n1-standard-4", "SPOT")
    ]
    # Spot without a price of its own: its on-demand price, marked as the bound it is.
    assert data["shapes"][0]["hourly_usd"] == pytest.approx(PRICES["n1-standard-4"])
    assert data["shapes"][0]["hourly_usd_is_on_demand_bound"] is True
    assert data["worst_case_usd"] == round(PRICES["n1-standard-4"] * 3600 / 3600, 2)
    assert [
        (
            s["machine_type"],
            s["accelerator_type"],
            s["accelerator_count"],
            s["scheduling_strategy"],
            s["region"],
        )
        for s in train["shapes"]
    ] == [
        ("n1-standard-4", "NVIDIA_TESLA_T4", 1, "SPOT", "us-central1"),
        ("g2-standard-4", "NVIDIA_L4", 1, "SPOT", "us-central1"),
        ("n1-standard-4", "NVIDIA_TESLA_T4", 1, "STANDARD", "us-central1"),
    ]
    hourly = [s["hourly_usd"] for s in train["shapes"]]
    assert hourly[0] == pytest.approx(T4_SHAPE) and hourly[2] == pytest.approx(T4_SHAPE)
    assert hourly[1] is None  # no sourced L4 or g2 price: none is made up
    # Under maxCostUsd the unpriced shape is skipped (cost/limits.py): the cap counts every shape left, so
    # the worst case is known; the others are in the chain (`skipped` false).
    assert "no sourced price for g2-standard-4 (us-central1, SPOT)" in train["shapes"][1]["skipped"]
    assert train["shapes"][0]["skipped"] is False and train["shapes"][2]["skipped"] is False
    assert train["worst_case_usd"] == round(T4_SHAPE, 2)
    assert plan["worst_case_usd"] == pytest.approx(data["worst_case_usd"] + train["worst_case_usd"], abs=0.01)


def test_dev_with_allow_unpriced_shapes_keeps_the_l4_and_its_worst_case_is_unknown(capsys, tmp_path):
    values = dev_with(allowUnpricedShapes=True)
    _, plan = plan_json(capsys, "dev", write_stack(tmp_path, "dev", values))
    train = plan["jobs"][1]
    assert train["allow_unpriced_shapes"] is True
    assert [s["skipped"] for s in train["shapes"]] == [False, False, False]
    assert train["worst_case_usd"] is None and plan["worst_case_usd"] is None


def test_prod_json_has_its_fallbacks_and_regions(capsys):
    _, plan = plan_json(capsys, "prod")
    data, train = plan["jobs"]
    assert data["worst_case_usd"] == round(PRICES["n1-standard-8"] * 10800 / 3600, 2)
    home = [(s["machine_type"], s["accelerator_type"], s["scheduling_strategy"]) for s in train["shapes"][:4]]
    assert home == [
        ("n1-standard-16", "NVIDIA_TESLA_T4", "STANDARD"),
        ("g2-standard-24", "NVIDIA_L4", "STANDARD"),
        ("n1-standard-16", "NVIDIA_TESLA_V100", "STANDARD"),
        ("g2-standard-24", "NVIDIA_L4", "FLEX_START"),
    ]
    # The whole chain again in the fallback region, after the home region's.
    assert [s["region"] for s in train["shapes"]] == ["us-central1"] * 4 + ["us-east1"] * 4
    assert [s["machine_type"] for s in train["shapes"][4:]] == [m for m, _, _ in home]
    # Chief and one worker, each 2 GPUs: both machines are priced.
    t4 = 2 * (PRICES["n1-standard-16"] + 2 * PRICES["NVIDIA_TESLA_T4"])
    v100 = 2 * (PRICES["n1-standard-16"] + 2 * PRICES["NVIDIA_TESLA_V100"])
    assert train["shapes"][0]["hourly_usd"] == pytest.approx(t4)
    assert train["shapes"][2]["hourly_usd"] == pytest.approx(v100)
    assert [s["hourly_usd"] for s in train["shapes"][4:]] == [None] * 4  # us-east1: no sourced price
    # Under maxCostUsd every unpriced shape is skipped; the dearest shape left is the V100 pair.
    assert [bool(s["skipped"]) for s in train["shapes"]] == [False, True, False, True] + [True] * 4
    assert train["worst_case_usd"] == round(v100 * 3, 2)
    assert plan["worst_case_usd"] == pytest.approx(data["worst_case_usd"] + train["worst_case_usd"], abs=0.01)


def test_worst_cases_add_up_when_every_shape_has_a_price(capsys, tmp_path):
    values = dev_with(fallbacks=None, spot=False, timeoutSeconds=7200)
    _, plan = plan_json(capsys, "dev", write_stack(tmp_path, "dev", values))
    data, train = plan["jobs"]
    assert data["worst_case_usd"] == round(PRICES["n1-standard-4"] * 2, 2)
    assert train["worst_case_usd"] == round(T4_SHAPE * 2, 2)
    assert plan["worst_case_usd"] == pytest.approx(data["worst_case_usd"] + train["worst_case_usd"], abs=0.01)


def test_dev_text_as_printed(capsys):
    assert main(["--stack", "dev"], root=ROOT) == 0
    text = capsys.readouterr().out
    assert f"{CUSTOM_JOB}" in text and "gcp:storage/bucket:Bucket" in text
    jobs = text[text.index("Jobs, in the order they run") :]
    assert jobs.index("1. data-prep (CustomJob") < jobs.index("2. train (CustomJob")
    lines = [line.strip() for line in jobs.splitlines()]
    assert (
        f"shape       n1-standard-4, NVIDIA_TESLA_T4 x 1, SPOT, us-central1: at most USD {T4_SHAPE:.2f}/h "
        "(on-demand bound*)" in lines
    )
    assert (
        "fallback 1  g2-standard-4, NVIDIA_L4 x 1, SPOT, us-central1: skipped (maxCostUsd**): no sourced "
        "price for g2-standard-4, NVIDIA_L4" in lines
    )
    assert (
        f"fallback 2  n1-standard-4, NVIDIA_TESLA_T4 x 1, STANDARD, us-central1: USD {T4_SHAPE:.2f}/h"
        in lines
    )
    assert f"worst case: USD {T4_SHAPE:.2f}" in lines
    assert any(line.startswith("** a shape without a sourced price is skipped") for line in lines)
    assert any("figures as read on 2026-11-22" in line for line in lines)
    # The bound says where it comes from; the example ids are named as what `pulumi up` would stop at.
    assert f"* SPOT: {pricing.bound_words('SPOT')}" in lines
    assert "NOTE: vertex-training:gcpProject and vertex-training:billingAccount: 'my-training-dev'" in text
    assert (
        "`pulumi up` stops here.\n  Fix: run `pulumi config set --stack dev vertex-training:gcpProject"
        in text
    )


def test_prod_text_names_every_fallback_and_its_region(capsys):
    assert main(["--stack", "prod"], root=ROOT) == 0
    text = capsys.readouterr().out
    for name in ("fallback 1", "fallback 3", "shape in us-east1", "fallback 3 in us-east1"):
        assert f"     {name} " in text, name
    assert "for 2 machines" in text  # chief and worker priced together
    assert "FLEX_START, us-central1: skipped (maxCostUsd**): no sourced price" in text


def test_local_stack_bills_nothing(capsys):
    code, plan = plan_json(capsys, "local")
    assert code == 0 and plan["project"] == "local"
    assert plan["jobs"] and all(job["worst_case_usd"] == 0 for job in plan["jobs"])
    assert plan["worst_case_usd"] == 0
    assert {r["type"] for r in plan["resources"]} == {
        "vertex-training:stack:TrainingJobs",
        CUSTOM_JOB,
        "vertex-training:stack:Predictions",
        "pulumi-python:dynamic/vertex:BatchPredictionJob",
    }
    # The batch prediction (a third job kind) is planned after the training it classifies with.
    assert [job["kind"] for job in plan["jobs"]] == ["CustomJob", "CustomJob", "BatchPredictionJob"]


def test_a_tuning_study_is_planned_between_data_and_training(capsys, tmp_path):
    from tests.stack.test_tuning_stack import STUDY

    values = dev_with(tuning=STUDY, fallbacks=None, spot=False, timeoutSeconds=3600)
    _, plan = plan_json(capsys, "dev", write_stack(tmp_path, "dev", values))
    assert [(job["name"], job["kind"]) for job in plan["jobs"]] == [
        ("data-prep", "CustomJob"),
        ("tune", "HyperparameterTuningJob"),
        ("train", "CustomJob"),
    ]
    tune = plan["jobs"][1]
    assert [s["hourly_usd"] for s in tune["shapes"]] == [pytest.approx(T4_SHAPE)]  # one trial's machine
    # Every trial of maxTrials to its timeout on the dearest shape.
    assert tune["worst_case_usd"] == round(T4_SHAPE * STUDY["maxTrials"], 2)
    assert plan["worst_case_usd"] == pytest.approx(
        sum(job["worst_case_usd"] for job in plan["jobs"]), abs=0.01
    )


def test_a_cloud_batch_prediction_is_planned_without_a_price(capsys, tmp_path):
    """No prediction node-hour price has a source here (docs/batch-prediction.md, Sources): the batch job's
    shapes and worst case are null in JSON and "no sourced price" in text, never a training figure."""
    batch = {"images": "gs://my-bucket/to-classify/", "machineType": "n1-standard-4", "maxReplicaCount": 2}
    # allowUnpricedShapes: under the dev stack's maxCostUsd an unpriced shape is otherwise not run.
    root = write_stack(tmp_path, "dev", dev_with(batchPrediction=batch, allowUnpricedShapes=True))
    _, plan = plan_json(capsys, "dev", root)
    (job,) = [job for job in plan["jobs"] if job["kind"] == "BatchPredictionJob"]
    assert [s["machine_type"] for s in job["shapes"]] == ["n1-standard-4"]
    assert [s["hourly_usd"] for s in job["shapes"]] == [None] and job["worst_case_usd"] is None
    assert plan["worst_case_usd"] is None
    assert main(["--stack", "dev"], root=root) == 0
    text = capsys.readouterr().out
    assert "BatchPredictionJob" in text and "no sourced price" in text


def test_max_hourly_usd_shows_the_shapes_it_skips_with_their_price(capsys, tmp_path):
    # A per-fallback ceiling above the job's keeps that fallback: the on-demand T4 at USD 0.62/h.
    values = dev_with(
        maxHourlyUsd=0.5,
        fallbacks=[{"schedulingStrategy": "STANDARD", "maxHourlyUsd": 1}],
    )
    _, plan = plan_json(capsys, "dev", write_stack(tmp_path, "dev", values))
    train = plan["jobs"][1]
    spot, on_demand = train["shapes"]
    assert spot["skipped"] == (
        f"its on-demand price USD {T4_SHAPE:.2f}/h (the bound of a SPOT price) is above "
        "max_hourly_usd USD 0.50"
    )
    assert on_demand["skipped"] is False and train["worst_case_usd"] == round(T4_SHAPE, 2)
    assert main(["--stack", "dev"], root=tmp_path) == 0
    text = capsys.readouterr().out
    assert "skipped (maxHourlyUsd): its on-demand price USD 0.62/h" in text


def test_allow_unpriced_shapes_is_named_where_the_cap_cannot_count(capsys, tmp_path):
    values = dev_with(allowUnpricedShapes=True)
    assert main(["--stack", "dev"], root=write_stack(tmp_path, "dev", values)) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    assert (
        "cap: USD 5.00, maxCostUsd: cancelled at that running cost (allowUnpricedShapes: true: time on "
        "fallback 1 is not counted)" in lines
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_images_are_the_tags_the_builders_push(capsys, stack):
    """Offline the plan names each image by the content tag its builder pushes (Cloud Build here); prod
    registers its model, so it builds the serving image too, dev does not."""
    from infra.cloudbuild.resource import RESOURCE_TYPE as IMAGE_BUILD

    _, plan = plan_json(capsys, stack)
    run = run_program(lambda: build(stack_config(stack)), stack=stack, preview=True)
    pushed = {
        r.inputs["image_name"]: f"us-central1-docker.pkg.dev/my-training-{stack}/vertex-training-{stack}/"
        f"{r.inputs['image_name']}:{r.inputs['tag']}"
        for r in run.by_type(IMAGE_BUILD)
    }
    assert {image["name"]: image["uri"] for image in plan["images"]} == pushed
    assert sorted(pushed) == (["serving", "trainer"] if stack == "prod" else ["trainer"])
    main(["--stack", stack])
    text = capsys.readouterr().out
    assert "Images it builds (tagged by their content here; `pulumi up` pins each by digest):" in text
    assert all(uri in text for uri in pushed.values())
