"""Prediction machines (a deployed model's node, a batch job's machines) are priced from the Billing Catalog's
"Vertex AI: Online/Batch Prediction" SKUs (real client, fake service, records worded as billing records show
them: tests/fakes/prediction_skus.py), never from training's, and not at all where the SKUs are ambiguous or
absent."""

import pytest

from infra.vertex.batch import spec as batch_spec
from infra.vertex.batch.kind import BATCH_PREDICTION_JOB
from infra.vertex.capacity import placement
from infra.vertex.capacity.placement import Pool
from infra.vertex.cost import limits, pricing
from infra.vertex.cost.serving import CATALOG_SOURCE, serving_cost
from infra.vertex.deployment import spec as deployment_spec
from infra.vertex.deployment_provider import DeploymentProvider
from tests.fakes.prediction_skus import (
    A2_CORE,
    A2_RAM,
    A100_80GB,
    AMERICAS,
    N1_CORE,
    N1_RAM,
    PREFIX,
    add_prediction_skus,
)
from tests.vertex.batch_props import batch_props
from tests.vertex.props import placed

# n1-standard-4: 4 vCPUs, 15 GiB; a2-ultragpu-1g: 12 vCPUs, 170 GiB (capacity/machines.py).
N1_STANDARD_4 = 4 * N1_CORE + 15 * N1_RAM
# Training SKUs of the same parts at other (test) prices: a prediction node never takes them.
TRAINING_CORE, TRAINING_RAM = 0.0401, 0.0054


def add_training_n1(fake) -> None:
    core, ram = "Custom Training N1 Predefined Instance Core", "Custom Training N1 Predefined Instance Ram"
    fake.add_sku(f"{core} running in Americas", TRAINING_CORE, regions=AMERICAS)
    fake.add_sku(f"{ram} running in Americas", TRAINING_RAM, regions=AMERICAS, unit="GiBy.h")


@pytest.fixture
def catalog(fake_vertex_and_catalog):
    _jobs, fake = fake_vertex_and_catalog
    add_prediction_skus(fake)
    add_training_n1(fake)
    return fake


def node(machine: str, accelerator: str | None = None, count: int = 0) -> Pool:
    return Pool(machine, accelerator, count, 1, prediction=True)


def deployment(**overrides):
    props = {
        "project": "demo-project",
        "region": "us-central1",
        "machine_type": "n1-standard-4",
        "min_replica_count": 1,
        "max_replica_count": 3,
    }
    return {**props, **overrides}


def test_a_deployed_node_is_its_cores_and_memory_at_the_prediction_skus(catalog):
    cost = serving_cost("us-central1", "n1-standard-4", None, 0, 1, 3, False, "demo-project")
    assert cost.node_hourly_usd == pytest.approx(N1_STANDARD_4)  # 4 x 0.0312 + 15 x 0.0042 = 0.1878
    assert cost.hourly(3) == pytest.approx(3 * N1_STANDARD_4)
    assert cost.source == CATALOG_SOURCE and CATALOG_SOURCE in cost.text()
    # Training keeps its own SKUs: the same machine trains at the training parts' prices.
    assert pricing.hourly_price("us-east1", "n1-standard-4") == pytest.approx(
        4 * TRAINING_CORE + 15 * TRAINING_RAM
    )
    assert catalog.methods() == ["ListSkus"]  # one listing serves both


def test_a_gpu_node_adds_its_gpus_and_the_management_fee_skus_are_not_counted(catalog):
    # The fee SKUs ("... management fee on A2 Instance Core in Iowa") name the same family and part: were they
    # counted, the core would have two prices and no figure.
    shape = node("a2-ultragpu-1g", "NVIDIA_A100_80GB", 1)
    expected = 12 * A2_CORE + 170 * A2_RAM + A100_80GB
    assert pricing.pool_hourly("us-central1", shape) == pytest.approx(expected)
    # The A100 80GB SKU is Iowa's alone: elsewhere the node has no figure, and `missing` says which part.
    assert pricing.pool_hourly("us-east1", shape) is None
    assert pricing.missing("us-east1", [shape], "STANDARD") == [
        "NVIDIA_A100_80GB (us-east1, batch prediction: no sourced price)"
    ]


def test_two_prices_for_one_part_in_a_region_give_no_figure_there(catalog):
    catalog.add_sku(f"{PREFIX} N1 Predefined Instance Core running in Iowa", 0.0999, regions=("us-central1",))
    assert pricing.prediction_hourly("us-central1", "n1-standard-4") is None
    cost = serving_cost("us-central1", "n1-standard-4", None, 0, 1, 3, False)
    assert cost.node_hourly_usd is None and "no Billing Catalog price" in cost.why
    # us-east1 sees one core SKU only: it keeps its figure.
    assert pricing.prediction_hourly("us-east1", "n1-standard-4") == pytest.approx(N1_STANDARD_4)


@pytest.mark.parametrize(
    ("region", "item"),
    [
        ("europe-west4", "n1-standard-4"),  # no prediction SKU lists the region
        ("us-central1", "e2-standard-4"),  # no E2 prediction SKU
        ("us-central1", "NVIDIA_TESLA_T4"),  # no T4 prediction SKU (no source shows one)
        ("us-central1", "a3-highgpu-1g"),  # SKUs exist, but no machine table entry or family words here
    ],
)
def test_an_item_without_prediction_skus_has_no_figure(catalog, region, item):
    assert pricing.prediction_hourly(region, item) is None


def test_spot_and_an_unreadable_or_offline_catalog_give_no_prediction_figure(catalog):
    assert serving_cost("us-central1", "n1-standard-4", None, 0, 1, 3, True).node_hourly_usd is None
    assert pricing.pool_hourly("us-central1", node("n1-standard-4"), "SPOT") is None
    pricing.Catalog.offline()  # what `make plan` does: nothing is read from Google
    assert serving_cost("us-central1", "n1-standard-4", None, 0, 1, 3, False).node_hourly_usd is None


def test_only_prediction_skus_price_a_prediction_node(fake_vertex_and_catalog):
    _jobs, fake = fake_vertex_and_catalog
    add_training_n1(fake)
    assert pricing.prediction_hourly("us-east1", "n1-standard-4") is None
    assert pricing.hourly_price("us-east1", "n1-standard-4") is not None


def test_max_hourly_usd_holds_a_deployment_at_its_catalog_price(catalog, capsys):
    # 3 replicas x 0.1878 = 0.5634 per hour.
    (failure,) = deployment_spec.price_failures(deployment(max_hourly_usd=0.5))
    assert failure[0] == "max_hourly_usd" and "costs USD 0.56/h at 3 replicas" in failure[1]
    assert deployment_spec.price_failures(deployment(max_hourly_usd=0.6)) == []
    (line, _) = DeploymentProvider().preview_lines(deployment())
    assert "USD 0.1878 per node hour (Cloud Billing Catalog" in line and "USD 0.56/h" in line


def test_a_batch_job_is_priced_and_counted_by_the_dollar_cap(catalog):
    props = batch_props(max_replica_count=2, max_cost_usd=5.0)
    pools = batch_spec.body(props).pools
    rate = pricing.shape_rate("us-central1", pools, "STANDARD", "demo-project")
    assert rate is not None and rate.usd == pytest.approx(2 * N1_STANDARD_4) and not rate.bound
    assert pricing.estimate_usd("us-central1", pools, "STANDARD", 1800) == pytest.approx(
        N1_STANDARD_4, abs=1e-4
    )
    verdict = limits.verdict(props, 0, placement.primary_shape(props, pools), None, pools)
    assert verdict.skipped is None and verdict.missing == ()
    assert limits.verdict(
        {**props, "max_hourly_usd": 0.3}, 0, placement.primary_shape(props, pools), None, pools
    ).key == ("max_hourly_usd")


@pytest.mark.parametrize("kind", ["ANY_RESERVATION", "SPECIFIC_RESERVATION"])
def test_a_node_that_may_take_a_reservation_has_no_figure(catalog, kind):
    # With a reservation Vertex bills Compute Engine's prices plus a management fee ("Use reservations with
    # batch inference", Billing): the on-demand prediction SKUs are not its bill.
    affinity = {"type": kind, "reservation": "projects/p/zones/us-central1-a/reservations/r"}
    cost = deployment_spec.cost(deployment(reservation_affinity=affinity))
    assert cost is not None and cost.node_hourly_usd is None and "reservation" in cost.why
    props = batch_props(reservation_affinity=affinity)
    (pool,) = placed(props, BATCH_PREDICTION_JOB).pools
    assert pool.reserved and pricing.pool_hourly("us-central1", pool) is None
    assert pricing.missing("us-central1", [pool], "STANDARD") == [
        f"n1-standard-4 (us-central1, batch prediction: {pricing.RESERVED_WHY})"
    ]
    # NO_RESERVATION runs on demand: priced.
    none = {"type": "NO_RESERVATION"}
    assert deployment_spec.cost(deployment(reservation_affinity=none)).node_hourly_usd == pytest.approx(
        N1_STANDARD_4
    )


def test_a_reserved_batch_job_is_priced_at_check_as_each_attempt_is_at_run_time(catalog):
    """Check (shape_costs) and an attempt (Placed.rate) price every shape by one rule: the primary takes its
    reservation (no sourced figure), a fallback on other machines drops it and is priced as on demand."""
    affinity = {"type": "ANY_RESERVATION"}
    props = batch_props(
        reservation_affinity=affinity,
        fallbacks=[{"machine_type": "n1-standard-8"}, {"reservation_affinity": {"type": "NO_RESERVATION"}}],
    )
    at_check = [cost.rate.usd if cost.rate else None for cost in BATCH_PREDICTION_JOB.shape_costs(props)]
    request = placed(props, BATCH_PREDICTION_JOB).request
    at_run = [request.on(shape, index).rate for index, shape in enumerate(request.chain)]
    assert at_check[0] is None and at_run[0] is None
    assert at_check[1:] == [rate.usd if rate else None for rate in at_run[1:]]
    assert None not in at_check[1:] and at_check[2] == pytest.approx(N1_STANDARD_4)
