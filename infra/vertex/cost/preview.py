"""What a job may cost, said before it runs: each shape's hourly price, the worst case, the expected cost.
Worst case: the dearest shape for timeout_seconds, which caps all attempts (lifecycle/restarts.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from infra.dynamic.polling import duration_text
from infra.vertex.capacity import gpu_regions, placement
from infra.vertex.capacity.placement import Pool
from infra.vertex.cost import limits, pricing, storage_transfer


@dataclass(frozen=True)
class ShapeCost:
    name: str  # "shape" or "fallback 1", ...
    machines: str  # e.g. "1 x n1-standard-8 + 1 x NVIDIA_TESLA_T4"
    shape: placement.Shape  # in its region: the chief's machine and how it is provisioned
    replicas: int  # machines of all pools together, which `rate` pays for
    rate: pricing.Rate | None  # what the cap counts: the price, or the on-demand bound of Spot/FLEX
    missing: tuple[str, ...]  # what has no price, when `rate` is None
    skipped: str | None = None  # why the job's price limits skip this shape (cost/limits.py); None: in chain
    skip_key: str | None = None  # the input that skips it: max_hourly_usd or max_cost_usd


def shape_name(index: int, fallbacks: int, chain: Sequence[placement.Shape]) -> str:
    """`shape`, `fallback 1`, ...; the chain again in a fallback region: `fallback 1 in us-east4`."""
    at = limits.home_index(fallbacks, index, chain)
    name = "shape" if at == 0 else f"fallback {at}"
    return name if index <= fallbacks else f"{name} in {chain[index].region}"


def shape_costs(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> list[ShapeCost]:
    costs = []
    chain = placement.shapes(props, machines)
    for index, shape in enumerate(chain):
        region, pools = placement.on_shape(props, shape, machines)
        found = limits.verdict(props, index, shape, chain, machines)
        costs.append(
            ShapeCost(
                shape_name(index, len(props.get("fallbacks") or []), chain),
                ", ".join(pool.machines() for pool in pools),
                replace(shape, region=region),
                sum(pool.replica_count for pool in pools),
                found.rate,
                found.missing,
                found.skipped,
                found.key,
            )
        )
    return costs


def dearest_hourly(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> float | None:
    """What the cap counts per hour on the dearest shape the job may run on (the shapes its limits skip left
    out); None when such a shape has no figure."""
    rates = [cost.rate for cost in shape_costs(props, machines) if cost.skipped is None]
    if not rates or None in rates:
        return None
    return max(rate.usd for rate in rates if rate is not None)


def worst_case_usd(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> float | None:
    """The dearest shape the job may run on for timeout_seconds, every replica (dearest_hourly)."""
    dearest = dearest_hourly(props, machines)
    return None if dearest is None else round(dearest * float(props["timeout_seconds"]) / 3600.0, 2)


def expected_line(outputs: Mapping[str, Any]) -> str | None:
    """`expected USD 0.42: the previous run took 40m 10s at USD 0.62/h`, from a previous run's outputs, at
    what the cap counts on the shape it ran on (its `placement`, else its own)."""
    seconds = outputs.get("duration_seconds")
    if not isinstance(seconds, int | float) or not seconds or "worker_pools" not in outputs:
        return None
    if outputs.get("state") != "JOB_STATE_SUCCEEDED":  # a capped or failed run says nothing of a whole one
        return None
    ran, primary = outputs.get("placement"), placement.primary_shape(outputs)
    shape = placement.resolve(ran, primary) if ran else primary
    region, pools = placement.on_shape(outputs, shape)
    rate = pricing.shape_rate(region, pools, shape.scheduling_strategy, outputs.get("project"))
    if rate is None:
        return None
    return (
        f"expected cost USD {rate.usd * seconds / 3600.0:.2f}: the previous run took "
        f"{duration_text(seconds)} at USD {rate.usd:.2f}/h"
    )


def preview_lines(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> list[str]:
    """The cost lines `check` prints for a Vertex job; a worst case over max_cost_usd is a WARNING line."""
    if props.get("runner") != "vertex" or not limits.chain_known(props):
        return []
    timeout = float(props["timeout_seconds"])
    lines: list[str] = []
    costs = shape_costs(props, machines)
    for cost in costs:
        head = f"cost of {cost.name}: {cost.machines} ({cost.shape.scheduling_strategy})"
        if cost.skipped is not None:
            key = limits.STACK_KEYS[cost.skip_key or "max_cost_usd"]
            lines.append(f"{head}: skipped ({key}): {cost.skipped}")
        elif cost.rate is None:
            lines.append(f"{head}: no price for {', '.join(cost.missing)}, so no estimate")
        else:
            at_most = "at most " if cost.rate.bound else ""
            lines.append(
                f"{head}: {cost.rate.text()}, {at_most}USD {cost.rate.usd * timeout / 3600.0:.2f} for "
                f"timeout_seconds {int(timeout)}"
            )
    worst = worst_case_usd(props, machines)
    cap = props.get("max_cost_usd")
    cap_text = f"; max_cost_usd USD {float(cap):.2f}" if cap is not None else ""
    if worst is not None:
        bounds = any(cost.rate is not None and cost.rate.bound for cost in costs)
        kind = "list prices, on-demand for Spot/FLEX_START shapes without one" if bounds else "list prices"
        lines.append(f"worst case USD {worst:.2f} ({kind}, all attempts){cap_text}")
    unpriced = [cost.name for cost in costs if cost.rate is None and cost.skipped is None]
    if cap is not None and unpriced:
        # Only allow_unpriced_shapes keeps an unpriced shape in a capped chain (cost/limits.py).
        lines.append(
            f"WARNING: allowUnpricedShapes is true: max_cost_usd USD {float(cap):.2f} is not enforced while "
            f"the job runs on {', '.join(unpriced)}: no price (above), so that running time is not counted"
        )
    if cap is not None and not props.get("wait", True):
        lines.append(
            f"WARNING: max_cost_usd USD {float(cap):.2f} is not enforced with wait: false: nothing watches "
            "the job's running cost once it is submitted"
        )
    if cap is not None and worst is not None and worst > float(cap):
        lines.append(
            f"WARNING: worst case USD {worst:.2f} is over max_cost_usd USD {float(cap):.2f}: the job is "
            "cancelled when its running cost reaches the cap (its checkpoints stay); raise maxCostUsd or "
            "lower timeoutSeconds to let it run to the end"
        )
    return [*lines, *region_lines(props, machines)]


def region_lines(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> list[str]:
    """For shapes outside the bucket's region: data read across regions (once per region), the TensorBoard
    link they run without; and a WARNING per GPU/region the dated table does not list or cannot judge."""
    lines: list[str] = []
    seen: set[str] = set()
    for shape in placement.shapes(props, machines):
        if shape.region in seen or not placement.moves_from(props.get("region"), shape):
            continue
        seen.add(shape.region)
        transfer = storage_transfer.line(props.get("region"), shape)
        note = placement.tensorboard_note(
            shape, props.get("region"), props.get("tensorboard"), str(props.get("base_output_dir", ""))
        )
        lines.extend(line for line in (transfer, note) if line)
    return [*lines, *gpu_regions.warning_lines(gpu_regions.known_chain(props))]


# A study has no max_cost_usd (tuning_spec.SINGLE_JOB_INPUTS): say so where the cost is shown.
STUDY_CAP_LINE = (
    "WARNING: no dollar cap on the study: maxCostUsd caps the training job only; the study stops at "
    "max_trial_count x timeout_seconds, or when the budget kill switch cancels it"
)


def study_worst_case_usd(props: Mapping[str, Any]) -> float | None:
    """Every trial of max_trial_count running its timeout_seconds on the dearest shape (dearest_hourly)."""
    dearest = dearest_hourly(props)
    if dearest is None:
        return None
    return dearest * float(props["timeout_seconds"]) / 3600.0 * int(props["max_trial_count"])


def study_preview_lines(props: Mapping[str, Any]) -> list[str]:
    """The cost lines of a tuning job: a trial's hourly price on each shape it may run on, and the study's
    worst case (study_worst_case_usd)."""
    trials = props.get("max_trial_count")
    if props.get("runner") != "vertex" or not limits.chain_known(props) or not isinstance(trials, int):
        return []
    lines: list[str] = []
    costs = shape_costs(props)
    for cost in costs:
        where = "" if cost.name == "shape" else f" on {cost.name}"
        head = f"cost of a trial{where}: {cost.machines} ({cost.shape.scheduling_strategy})"
        if cost.skipped is not None:
            lines.append(f"{head}: skipped: {cost.skipped}")
        elif cost.rate is None:
            lines.append(f"{head}: no price for {', '.join(cost.missing)}, so no estimate")
        else:
            lines.append(f"{head}: {cost.rate.text()}")
    worst = study_worst_case_usd(props)
    if worst is not None:
        bounds = any(cost.rate is not None and cost.rate.bound for cost in costs)
        kind = "list prices, on-demand for Spot/FLEX_START shapes without one" if bounds else "list prices"
        lines.append(
            f"worst case USD {worst:.2f}: {trials} trials x timeout_seconds {int(props['timeout_seconds'])} "
            f"({kind})"
        )
    return [*lines, STUDY_CAP_LINE, *region_lines(props)]
