"""Prices come from the Cloud Billing Catalog (real client, fake service), else the cited table, else none."""

import pytest

from infra.vertex.capacity.placement import Pool
from infra.vertex.cost import pricing
from infra.vertex.cost.pricing import estimate_usd, hourly_price, missing

# The fake catalog's test prices (not Google's): each Spot figure is its own SKU, not a share of another.
CORE, RAM, T4 = 0.0401, 0.0054, 0.3912
SPOT_CORE, SPOT_RAM, SPOT_T4 = 0.0093, 0.0013, 0.1377
L4 = 0.6543
G2_CORE, G2_RAM = 0.0277, 0.0031


def pool(machine, accelerator=None, count=0, replicas=1):
    return Pool(machine, accelerator, count, replicas)


@pytest.fixture
def catalog(fake_vertex_and_catalog):
    _jobs, fake = fake_vertex_and_catalog
    for usage, core, ram, t4 in (("OnDemand", CORE, RAM, T4), ("Preemptible", SPOT_CORE, SPOT_RAM, SPOT_T4)):
        spot = "Spot Preemptible " if usage == "Preemptible" else ""
        fake.add_sku(
            f"{spot}Custom Training N1 Predefined Instance Core running in Americas", core, usage_type=usage
        )
        fake.add_sku(
            f"{spot}Custom Training N1 Predefined Instance Ram running in Americas",
            ram,
            usage_type=usage,
            unit="GiBy.h",
        )
        fake.add_sku(f"{spot}Custom Training Nvidia Tesla T4 GPU running in Americas", t4, usage_type=usage)
    fake.add_sku("Custom Training G2 Instance Core running in Americas", G2_CORE, free_tier=True)
    fake.add_sku("Custom Training G2 Instance Ram running in Americas", G2_RAM, unit="GiBy.h")
    fake.add_sku("Custom Training Nvidia L4 GPU running in Americas", L4)
    # Not training, or not on-demand: never a training price.
    fake.add_sku("Online Prediction Nvidia Tesla T4 GPU running in Americas", 9.99)
    fake.add_sku("Commitment v1: Custom Training Nvidia L4 GPU in Americas for 1 Year", 0.01)
    return fake


def test_an_n1_machine_with_a_t4_is_priced_from_its_catalog_skus(catalog):
    # n1-standard-8: 8 vCPUs and 30 GiB (Compute Engine's machine table).
    on_demand = 8 * CORE + 30 * RAM + T4
    spot = 8 * SPOT_CORE + 30 * SPOT_RAM + SPOT_T4
    shape = [pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)]
    assert estimate_usd("us-central1", shape, "STANDARD", 3600) == pytest.approx(on_demand, abs=1e-4)
    assert estimate_usd("us-central1", shape, "SPOT", 3600) == pytest.approx(spot, abs=1e-4)
    # The old flag still works, and the catalog was listed once for every look-up.
    assert estimate_usd("us-central1", shape, True, 1800) == pytest.approx(spot / 2, abs=1e-4)
    assert catalog.methods() == ["ListSkus"]
    (request,) = [req for _, req in catalog.calls]
    assert (request.parent, request.currency_code) == ("services/C7E2-9256-1C43", "USD")


def test_g2_with_l4_uses_the_paid_tier_and_the_fallback_families_get_a_figure(catalog):
    # g2-standard-8: 8 vCPUs, 32 GiB. The core SKU has a free first tier: the paid rate is the price.
    assert hourly_price("us-central1", "g2-standard-8", "STANDARD") == pytest.approx(
        8 * G2_CORE + 32 * G2_RAM
    )
    assert hourly_price("us-central1", "NVIDIA_L4", "STANDARD") == pytest.approx(L4)


@pytest.mark.parametrize(
    ("region", "item", "strategy"),
    [
        ("us-central1", "NVIDIA_L4", "SPOT"),  # no Preemptible L4 SKU: no Spot figure from the on-demand one
        ("us-central1", "NVIDIA_TESLA_T4", "FLEX_START"),  # no SKU is known for flex-start
        ("europe-west4", "NVIDIA_TESLA_T4", "STANDARD"),  # no SKU serves that region
        ("us-central1", "a3-highgpu-8g", "STANDARD"),  # no machine table entry, no SKU words
        ("us-central1", "n9-mystery-1", "STANDARD"),
    ],
)
def test_an_item_without_a_sourced_price_has_no_figure(catalog, region, item, strategy):
    assert hourly_price(region, item, strategy) is None


def test_two_skus_of_different_prices_for_one_part_give_no_figure(catalog):
    catalog.add_sku("Custom Training Nvidia L4 GPU running in Americas (new)", L4 + 0.1)
    assert hourly_price("us-central1", "NVIDIA_L4", "STANDARD") is None


def test_the_part_comes_from_the_resource_group_where_it_names_one(fake_vertex_and_catalog):
    """Another wording ("CPU", not Compute Engine's "Core") is priced by category.resource_group."""
    _jobs, fake = fake_vertex_and_catalog
    fake.add_sku("Vertex AI Training on N1 Predefined Instance CPU in Americas", CORE, resource_group="CPU")
    fake.add_sku(
        "Vertex AI Training on N1 Predefined Instance RAM in Americas",
        RAM,
        resource_group="RAM",
        unit="GiBy.h",
    )
    fake.add_sku("Vertex AI Training NVIDIA Tesla T4 in Americas", T4, resource_group="GPU")
    assert hourly_price("us-central1", "n1-standard-8", "STANDARD") == pytest.approx(8 * CORE + 30 * RAM)
    assert hourly_price("us-central1", "NVIDIA_TESLA_T4", "STANDARD") == pytest.approx(T4)


def test_dws_flex_and_spot_worded_skus_never_price_an_on_demand_part(catalog):
    catalog.add_sku("Custom Training Nvidia L4 GPU running in Americas (DWS)", L4 / 2)
    catalog.add_sku("Custom Training Nvidia L4 GPU Flex-start running in Americas", L4 / 3)
    catalog.add_sku("Custom Training Spot Nvidia L4 GPU running in Americas", L4 / 4)  # usage_type OnDemand
    assert hourly_price("us-central1", "NVIDIA_L4", "STANDARD") == pytest.approx(L4)


def test_volume_tiers_give_the_dearest_rate_so_a_cap_never_fires_late(fake_vertex_and_catalog):
    _jobs, fake = fake_vertex_and_catalog
    fake.add_sku("Custom Training Nvidia L4 GPU running in Americas", L4, cheaper_tiers=((720, L4 / 2),))
    assert hourly_price("us-central1", "NVIDIA_L4", "STANDARD") == pytest.approx(L4)


def test_missing_names_each_item_without_a_price_once(catalog):
    shape = [pool("n1-standard-8", "NVIDIA_L4", 1), pool("n1-standard-8", "NVIDIA_L4", 1, replicas=2)]
    assert estimate_usd("us-central1", shape, "SPOT", 3600) is None
    assert missing("us-central1", shape, "SPOT") == ["NVIDIA_L4 (us-central1, SPOT)"]


def test_an_unreadable_catalog_falls_back_to_the_cited_table_with_one_line(fake_vertex, capsys):
    # The fake JobService alone: ListSkus is UNIMPLEMENTED there.
    pricing.Catalog.forget()
    try:
        assert hourly_price("us-central1", "n1-standard-8", "STANDARD") == 0.436998
        assert hourly_price("us-central1", "NVIDIA_TESLA_T4", "STANDARD") == 0.4025
        assert hourly_price("us-central1", "NVIDIA_TESLA_T4", "SPOT") is None
        assert hourly_price("us-east1", "n1-standard-8", "STANDARD") is None
    finally:
        pricing.Catalog.forget()
    lines = [line for line in capsys.readouterr().err.splitlines() if "Cloud Billing Catalog" in line]
    assert len(lines) == 1 and "cited table" in lines[0]


def test_the_table_holds_no_spot_figure_and_says_where_it_comes_from():
    assert all(strategy == "STANDARD" for _region, strategy in pricing.TABLE)
    assert pricing.PRICE_LIST_URL.startswith("https://cloud.google.com/vertex-ai/pricing")
    assert pricing.PRICE_LIST_READ


def test_multi_worker_multi_gpu_for_90_minutes_from_the_table(fake_vertex):
    pricing.Catalog.forget()
    shape = [
        pool("n1-standard-16", "NVIDIA_TESLA_V100", 2),
        pool("n1-standard-16", "NVIDIA_TESLA_V100", 2, replicas=3),
    ]
    per_replica = 0.873996 + 2 * 2.8520
    try:
        assert estimate_usd("us-central1", shape, "STANDARD", 5400) == pytest.approx(
            4 * per_replica * 1.5, abs=1e-4
        )
    finally:
        pricing.Catalog.forget()
