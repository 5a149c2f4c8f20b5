"""The job's price limits (cost/limits.py) against the fake JobService and the fake Billing Catalog: under
max_cost_usd a shape without a price is skipped without a request (one line: key, shape, why) unless
allow_unpriced_shapes; max_hourly_usd skips shapes above it; a chain left empty is a check failure."""

from infra.vertex.cost import limits
from infra.vertex.cost import preview as cost_preview
from infra.vertex.custom_job import spec
from infra.vertex.provider import CustomJobProvider
from tests.fakes.vertex import STOCKOUT, shape_of
from tests.vertex.props import job_props

# The dev stack's chain (T4 Spot -> L4 Spot -> T4 on-demand) and its shapes, held by the fallback tests.
from tests.vertex.test_fallbacks import CHAIN, L4_SPOT, T4_ON_DEMAND, T4_SPOT

V100 = {"accelerator_type": "NVIDIA_TESLA_V100"}
# n1-standard-8 + 1 GPU on demand in us-central1, from pricing.TABLE (Vertex AI price list, 2026-11-22).
T4_HOURLY = 0.436998 + 0.4025
V100_HOURLY = 0.436998 + 2.852


def submitted(fake):
    return [req.custom_job for method, req in fake.calls if method == "CreateCustomJob"]


def create(**overrides):
    provider = CustomJobProvider()
    checked = provider.check({}, job_props(**{"spot": True, "fallbacks": CHAIN, **overrides}))
    assert checked.failures == []
    return provider.create(checked.inputs)


def test_under_a_cap_the_unpriced_fallback_is_skipped_with_one_line_and_no_job(fake_vertex, capsys):
    fake_vertex.capacity[T4_SPOT] = STOCKOUT
    outs = create(max_cost_usd=5).outs
    assert [shape_of(job) for job in submitted(fake_vertex)] == [T4_SPOT, T4_ON_DEMAND]
    _stocked_out, skipped, ran = outs["attempts"]
    assert (skipped["machine_type"], skipped["state"], skipped["job_name"]) == (
        "g2-standard-8",
        "SKIPPED",
        "",
    )
    assert skipped["reason"].startswith(
        "maxCostUsd (max_cost_usd): no sourced price for g2-standard-8 (us-central1, SPOT), NVIDIA_L4"
    )
    assert ran["state"] == "JOB_STATE_SUCCEEDED" and outs["placement"]["scheduling_strategy"] == "STANDARD"
    assert outs["estimated_cost_usd"] is not None  # every shape that ran is counted
    err = capsys.readouterr().err
    # One line: the key, the shape, why (and where the chain goes next).
    (line,) = [line for line in err.splitlines() if "max_cost_usd)" in line and "no sourced price" in line]
    assert line.startswith(
        "[train-densenet] leaving g2-standard-8 + 1 x NVIDIA_L4 (SPOT): maxCostUsd (max_cost_usd): no "
        "sourced price for g2-standard-8 (us-central1, SPOT)"
    )
    assert "allowUnpricedShapes: true" in line and "trying next: n1-standard-8 + 1 x NVIDIA_TESLA_T4" in line


def test_with_allow_unpriced_shapes_the_unpriced_fallback_runs(fake_vertex, capsys):
    fake_vertex.capacity[T4_SPOT] = STOCKOUT
    outs = create(max_cost_usd=5, allow_unpriced_shapes=True).outs
    assert [shape_of(job) for job in submitted(fake_vertex)] == [T4_SPOT, L4_SPOT]
    assert outs["placement"]["accelerator_type"] == "NVIDIA_L4"
    err = capsys.readouterr().err
    assert "(max_cost_usd): no sourced price" not in err
    assert "max_cost_usd USD 5.00 is not enforced while the job runs on this shape" in err


def test_a_shape_the_billing_catalog_prices_is_not_skipped(fake_vertex_and_catalog, capsys):
    jobs, catalog = fake_vertex_and_catalog
    # Spot SKUs for g2 and L4: the catalog overrides the table where it answers (pricing.hourly_price).
    for description, usd, unit in (
        ("Custom Training Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas", 0.25, "h"),
        ("Custom Training Spot Preemptible G2 Instance Core running in Americas", 0.01, "h"),
        ("Custom Training Spot Preemptible G2 Instance Ram running in Americas", 0.001, "GiBy.h"),
    ):
        catalog.add_sku(description, usd, usage_type="Preemptible", unit=unit)
    jobs.capacity[T4_SPOT] = STOCKOUT
    outs = create(max_cost_usd=5).outs
    assert [shape_of(job) for job in submitted(jobs)] == [T4_SPOT, L4_SPOT]
    assert outs["estimated_cost_usd"] is not None
    assert "(max_cost_usd): no sourced price" not in capsys.readouterr().err


def test_max_hourly_usd_skips_a_dearer_fallback_at_check_and_at_submission(fake_vertex, capsys):
    fake_vertex.capacity[T4_ON_DEMAND] = STOCKOUT
    props = job_props(fallbacks=[V100, {"accelerator_type": "NVIDIA_TESLA_P4"}], max_hourly_usd=1.5)
    checked = CustomJobProvider().check({}, props)
    assert checked.failures == []
    err = capsys.readouterr().err
    (preview,) = [line for line in err.splitlines() if "cost of fallback 1" in line]
    assert (
        f"skipped (maxHourlyUsd): its price USD {V100_HOURLY:.2f}/h is above max_hourly_usd USD 1.50"
        in preview
    )
    outs = CustomJobProvider().create(checked.inputs).outs
    shapes = [shape_of(job) for job in submitted(fake_vertex)]
    assert shapes == [T4_ON_DEMAND, ("n1-standard-8", "NVIDIA_TESLA_P4", "STANDARD")]  # never the V100
    assert outs["attempts"][1]["state"] == "SKIPPED"
    assert (
        "leaving n1-standard-8 + 1 x NVIDIA_TESLA_V100 (STANDARD): maxHourlyUsd (max_hourly_usd): its price "
        f"USD {V100_HOURLY:.2f}/h is above max_hourly_usd USD 1.50; trying next" in capsys.readouterr().err
    )
    # The worst case is over the shapes the job may run on: the P4 shape, not the V100.
    assert cost_preview.worst_case_usd(spec.with_defaults(props)) == round(0.436998 + 0.69, 2)


def test_a_fallback_entry_ceiling_overrides_the_jobs(fake_vertex):
    props = spec.with_defaults(job_props(fallbacks=[{**V100, "max_hourly_usd": 4}], max_hourly_usd=1))
    costs = cost_preview.shape_costs(props)
    assert [cost.skipped for cost in costs] == [None, None]  # T4 0.84 <= 1; V100 3.29 <= 4
    assert limits.ceiling(props, 0) == 1 and limits.ceiling(props, 1) == 4
    tighter = spec.with_defaults(job_props(fallbacks=[{**V100, "max_hourly_usd": 3}], max_hourly_usd=1))
    assert [bool(cost.skipped) for cost in cost_preview.shape_costs(tighter)] == [False, True]


def test_a_spot_shape_is_held_to_the_ceiling_by_its_on_demand_bound(fake_vertex):
    props = spec.with_defaults(job_props(spot=True, max_hourly_usd=0.5))
    (found,) = [limits.verdict(props, 0, shape) for shape in cost_preview.placement.shapes(props)]
    assert found.key == "max_hourly_usd" and found.rate is not None and found.rate.bound
    assert found.skipped == (
        f"its on-demand price USD {T4_HOURLY:.2f}/h (the bound of a SPOT price) is above "
        "max_hourly_usd USD 0.50"
    )


def test_a_chain_left_with_no_shape_is_a_check_failure_naming_the_cheapest(fake_vertex):
    checked = CustomJobProvider().check({}, job_props(fallbacks=[V100], max_hourly_usd=0.5))
    ((key, reason),) = [(f.property, f.reason) for f in checked.failures]
    assert key == "max_hourly_usd"
    assert (
        "the cheapest is n1-standard-8 + 1 x NVIDIA_TESLA_T4 (STANDARD) in us-central1 at "
        f"USD {T4_HOURLY:.2f}/h; "
        f"raise maxHourlyUsd to at least {T4_HOURLY:.2f}" in reason
    )


def test_a_capped_chain_with_no_price_at_all_is_a_check_failure_naming_allow_unpriced_shapes(fake_vertex):
    # europe-west4: the cited table has us-central1 only, and this fake has no catalog.
    checked = CustomJobProvider().check({}, job_props(region="europe-west4", max_cost_usd=5))
    ((key, reason),) = [(f.property, f.reason) for f in checked.failures]
    assert key == "max_cost_usd"
    assert "no shape of the chain has a sourced price" in reason and "allowUnpricedShapes: true" in reason
    allowed = CustomJobProvider().check(
        {}, job_props(region="europe-west4", max_cost_usd=5, allow_unpriced_shapes=True)
    )
    assert allowed.failures == []


def test_local_runs_are_never_limited(fake_vertex):
    props = spec.with_defaults(
        job_props(runner="local", max_cost_usd=1, max_hourly_usd=0.01, region="europe-west4")
    )
    assert spec.validate(props) == [] or all(key != "max_hourly_usd" for key, _ in spec.validate(props))
    assert all(cost.skipped is None for cost in cost_preview.shape_costs(props))


def test_bad_limit_values_are_check_failures():
    props = spec.with_defaults(
        job_props(max_hourly_usd=-1, allow_unpriced_shapes="yes", fallbacks=[{**V100, "max_hourly_usd": 0}])
    )
    found = dict(spec.validate(props))
    assert "max_hourly_usd must be a positive number" in found["max_hourly_usd"]
    assert "fallbacks[0].max_hourly_usd must be a positive number" in found["fallbacks[0].max_hourly_usd"]
    assert "allow_unpriced_shapes must be true or false" in found["allow_unpriced_shapes"]


def test_the_limits_change_in_place_and_keep_the_job_key():
    props = spec.with_defaults(job_props())
    limited_props = {**props, "max_hourly_usd": 2.0, "allow_unpriced_shapes": True}
    assert spec.job_key(props) == spec.job_key(limited_props)
    assert {"max_hourly_usd", "allow_unpriced_shapes"} <= spec.IN_PLACE_INPUTS


def test_a_batch_prediction_under_a_cap_is_refused_until_unpriced_shapes_are_allowed(fake_vertex):
    from infra.vertex.batch_provider import BatchPredictionProvider
    from tests.vertex.batch_props import batch_props

    # No prediction price is sourced: every shape of its chain would run uncounted.
    refused = BatchPredictionProvider().check({}, batch_props(max_cost_usd=5))
    ((key, reason),) = [(f.property, f.reason) for f in refused.failures]
    assert key == "max_cost_usd" and "allowUnpricedShapes: true" in reason
    allowed = BatchPredictionProvider().check({}, batch_props(max_cost_usd=5, allow_unpriced_shapes=True))
    assert allowed.failures == []
