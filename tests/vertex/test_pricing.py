"""Cost arithmetic: replicas x (machine + accelerators) x hours at the listed price; unknown -> no figure."""

import pytest

from infra.vertex import pricing
from infra.vertex.pricing import estimate_usd


def pool(machine, accelerator=None, count=0, replicas=1):
    return {
        "machine_type": machine,
        "accelerator_type": accelerator,
        "accelerator_count": count,
        "replica_count": replicas,
    }


def test_one_gpu_machine_for_an_hour_on_demand_and_spot():
    shape = [pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)]
    assert estimate_usd("us-central1", shape, spot=False, seconds=3600) == pytest.approx(
        0.436998 + 0.4025, abs=1e-4
    )
    assert estimate_usd("us-central1", shape, spot=True, seconds=3600) == pytest.approx(
        0.0874 + 0.1610, abs=1e-4
    )


def test_multi_worker_multi_gpu_for_90_minutes():
    shape = [
        pool("n1-standard-16", "NVIDIA_TESLA_V100", 2),
        pool("n1-standard-16", "NVIDIA_TESLA_V100", 2, replicas=3),
    ]
    per_replica = 0.873996 + 2 * 2.8520
    assert estimate_usd("us-central1", shape, spot=False, seconds=5400) == pytest.approx(
        4 * per_replica * 1.5, abs=1e-4
    )


def test_cpu_only_data_job_for_ten_minutes():
    assert estimate_usd("us-east1", [pool("n1-standard-4")], spot=False, seconds=600) == pytest.approx(
        0.218499 / 6, abs=1e-4
    )


def test_the_region_price_is_used_where_it_differs():
    shape = [pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)]
    assert estimate_usd("europe-west4", shape, spot=False, seconds=3600) == pytest.approx(
        0.436998 * 1.1 + 0.4025, abs=1e-4
    )


@pytest.mark.parametrize(
    ("region", "shape", "spot"),
    [
        ("us-central1", [pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1)], False),  # machine not listed
        ("us-central1", [pool("n1-standard-8", "NVIDIA_TESLA_T4", 1), pool("n9-mystery-1")], False),
        ("asia-south2", [pool("n1-standard-8")], False),  # region not listed
        ("europe-west4", [pool("n1-standard-8")], True),  # no Spot price recorded there
    ],
)
def test_anything_unlisted_gives_no_figure(region, shape, spot):
    assert estimate_usd(region, shape, spot=spot, seconds=3600) is None


def test_the_table_says_when_and_where_it_comes_from():
    assert pricing.PRICES_AS_OF and pricing.SOURCE_URL.startswith(
        "https://cloud.google.com/vertex-ai/pricing"
    )
