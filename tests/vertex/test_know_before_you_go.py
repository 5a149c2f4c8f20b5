"""Know before you go: where each GPU is offered (a preview warning naming the table's date, never a check
error), the quota pre-check in each shape's own region, cross-region reads at preview, the on-demand bound in
the closing line, and the fake JobService's capacity per region (what the lifecycle's tests stand on)."""

import pytest
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport

from infra.dynamic.endpoints import client_kwargs
from infra.vertex.capacity import gpu_regions, placement
from infra.vertex.capacity.placement import Shape
from infra.vertex.capacity.shape_checks import ACCELERATOR_TYPES
from infra.vertex.cost import preview as cost_preview
from infra.vertex.cost import storage_transfer
from infra.vertex.custom_job import spec
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.custom_job.report import summary_line
from infra.vertex.lifecycle import placing
from infra.vertex.lifecycle.outcome import Outcome
from tests.fakes.vertex import STOCKOUT, FakeJobService
from tests.vertex.props import PROJECT, custom_job_request, job_props, placed, pool

L4 = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"}
T4_QUOTA = "CustomModelTrainingT4GPUsPerProjectPerRegion"


def props(**overrides):
    return spec.with_defaults(job_props(**overrides))


def test_a_region_the_table_does_not_list_is_a_warning_naming_region_gpu_and_date_never_a_check_error():
    job = props(fallbacks=[{**L4, "region": "europe-west1"}])
    assert spec.validate(job) == []
    # The shape stays in the chain: Vertex judges at submission.
    assert [s.where() for s in placement.shapes(job)][
        1
    ] == "g2-standard-8 + 1 x NVIDIA_L4 (STANDARD) in europe-west1"
    (line,) = [
        line for line in gpu_regions.warning_lines(gpu_regions.known_chain(job)) if "NVIDIA_L4" in line
    ]
    assert line.startswith("WARNING: Vertex AI's Locations table read 2026-11-25")
    assert (
        "does not list NVIDIA_L4 for training in europe-west1" in line and gpu_regions.LOCATIONS_URL in line
    )
    assert "Vertex decides at submission" in line
    assert line in cost_preview.preview_lines(job)
    # A region of fallback_regions the table does not list for a shape's GPU: the shape is tried there too
    # (the user listed the region), with the same warning.
    moved = props(worker_pools=[pool(accelerator_type="NVIDIA_TESLA_V100")], fallback_regions=["us-east4"])
    assert spec.validate(moved) == []
    assert [shape.region for shape in placement.shapes(moved)] == ["us-central1", "us-east4"]
    (warned,) = gpu_regions.warning_lines(gpu_regions.known_chain(moved))
    assert "does not list NVIDIA_TESLA_V100 for training in us-east4" in warned


def test_a_gpu_or_region_the_table_cannot_judge_gives_a_warning_not_a_verdict():
    assert gpu_regions.offered("NVIDIA_TESLA_T4", "us-central1") is None  # T4's list was not read
    assert gpu_regions.offered("NVIDIA_H100_80GB", "europe-west3") is None  # read only in part
    assert gpu_regions.offered("NVIDIA_H100_80GB", "us-east5") is True
    assert gpu_regions.offered("NVIDIA_TESLA_V100", "europe-west1") is False
    lines = gpu_regions.warning_lines(
        gpu_regions.known_chain(props(fallbacks=[L4], fallback_regions=["us-east4"]))
    )
    assert [line.split(" is not in")[0] for line in lines] == [
        "WARNING: whether Vertex AI offers NVIDIA_TESLA_T4 for training in us-central1",
        "WARNING: whether Vertex AI offers NVIDIA_TESLA_T4 for training in us-east4",
    ]
    assert (
        gpu_regions.warning_lines(gpu_regions.known_chain(props(runner="local", worker_pools=[pool()]))) == []
    )


def test_reads_across_regions_are_priced_where_the_page_gives_a_rate_else_only_named():
    job = props()
    east = storage_transfer.line(
        job["region"], Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "STANDARD", "us-east4")
    )
    assert east is not None and "billed at USD 0.02/GiB" in east and storage_transfer.PRICING_URL in east
    europe = storage_transfer.line(
        job["region"], Shape("g2-standard-8", "NVIDIA_L4", 1, "STANDARD", "europe-west4")
    )
    assert europe is not None and "billed as inter-region data transfer" in europe and "USD" not in europe
    assert storage_transfer.line(job["region"], placement.shapes(job)[0]) is None


def test_preview_prices_each_shape_in_its_own_region_and_says_what_crossing_regions_means():
    job = props(
        fallback_regions=["us-east4"],
        tensorboard="projects/demo-project/locations/us-central1/tensorboards/1",
        max_cost_usd=5,
    )
    lines = cost_preview.preview_lines(job)
    assert lines[0].startswith(
        "cost of shape: 1 x n1-standard-8 + 1 x NVIDIA_TESLA_T4 (STANDARD): USD 0.84/h"
    )
    assert lines[1].startswith("cost of shape in us-east4: ") and "(us-east4, STANDARD)" in lines[1]
    assert any(line.startswith("in us-east4: training data is read across regions") for line in lines)
    assert any(line.startswith("in us-east4: the job runs without the TensorBoard link") for line in lines)


def test_the_quota_pre_check_reads_the_shapes_own_region(fake_vertex_and_quotas):
    _jobs, fake_quotas = fake_vertex_and_quotas
    fake_quotas.set_quota(PROJECT, T4_QUOTA, default=4, regions={"us-east4": 0})
    job = props(fallback_regions=["us-east4"])
    home, moved = placement.shapes(job)
    assert placing.quota_shortfall(CUSTOM_JOB, placed(job, shape=home)) is None
    found = placing.quota_shortfall(CUSTOM_JOB, placed(job, shape=moved))
    assert found is not None and "in us-east4 is 0" in found.reason


def test_the_closing_line_says_a_spot_cost_is_at_most_the_on_demand_bound():
    outs = {**props(spot=True, max_cost_usd=5), "state": "JOB_STATE_SUCCEEDED", "duration_seconds": 1800.0,
            "estimated_cost_usd": 0.42, "estimated_cost_bound": True}  # fmt: skip
    line = summary_line(Outcome.stored(outs, CUSTOM_JOB), placed(outs))
    assert "estimated cost at most USD 0.42 (on-demand price; Spot is billed below it, " in line
    assert "USD 0.42 of max_cost_usd USD 5.00" in line


def test_the_fake_keeps_capacity_per_region_and_shape(fake_vertex: FakeJobService):
    """A stockout in one region, machines in another: the documented message names the region."""
    fake_vertex.capacity[("us-central1", "n1-standard-8", "NVIDIA_TESLA_T4", "SPOT")] = STOCKOUT
    client = aiplatform_v1.JobServiceClient(
        **client_kwargs(JobServiceGrpcTransport, "us-central1-aiplatform.googleapis.com")
    )
    job = custom_job_request(props(spot=True), 0)
    states = {}
    for region in ("us-central1", "us-east4"):
        created = client.create_custom_job(parent=f"projects/{PROJECT}/locations/{region}", custom_job=job)
        for _ in range(4):
            found = client.get_custom_job(name=created.name)
        states[region] = (found.state.name, found.error.message)
    assert states["us-central1"][0] == "JOB_STATE_FAILED"
    assert "Resources are insufficient in region: us-central1" in states["us-central1"][1]
    assert states["us-east4"] == ("JOB_STATE_SUCCEEDED", "")
    listed = client.list_custom_jobs(parent=f"projects/{PROJECT}/locations/us-east4")
    assert [j.name.split("/")[3] for j in listed] == ["us-east4"]  # a list sees its own region only


@pytest.mark.parametrize("kind", ["NVIDIA_L4", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_A100", "NVIDIA_H100_80GB"])
def test_every_listed_gpu_is_a_vertex_accelerator(kind):
    assert kind in ACCELERATOR_TYPES


def test_a_preview_with_unknown_images_still_warns_where_the_gpu_is_not_listed():
    from pulumi.output import Unknown

    moved = props(worker_pools=[pool(image_uri=Unknown(), accelerator_type="NVIDIA_TESLA_V100")],
                  fallback_regions=["us-east4"])  # fmt: skip
    assert spec.validate(moved) == []
    assert [line[:44] for line in gpu_regions.warning_lines(gpu_regions.known_chain(moved))] == [
        "WARNING: Vertex AI's Locations table read 20"
    ]
    unknown_regions = props(fallback_regions=[Unknown()], fallbacks=[{**L4, "region": Unknown()}])
    assert spec.validate(unknown_regions) == []
    assert gpu_regions.warning_lines(gpu_regions.known_chain(unknown_regions)) == []
