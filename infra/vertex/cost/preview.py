"""What a job may cost, said before it runs: each shape's hourly price, the worst case, the expected cost.

`timeout_seconds` caps the running time of all attempts together (lifecycle/restarts.py), so the job's worst
case is its dearest shape (its own or a fallback's) running that long, every replica billed. Prices are
list prices from infra/vertex/cost/pricing.py: an item without one is named, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.capacity import placement
from infra.vertex.cost import pricing
from infra.vertex.lifecycle.heartbeat import duration_text


@dataclass(frozen=True)
class ShapeCost:
    name: str  # "shape" or "fallback 1", ...
    machines: str  # e.g. "1 x n1-standard-8 + 1 x NVIDIA_TESLA_T4"
    strategy: str
    hourly: float | None
    missing: tuple[str, ...]


def _machines(pools: list[Mapping[str, Any]]) -> str:
    parts = []
    for pool in pools:
        count = int(pool.get("accelerator_count") or 0)
        gpus = f" + {count} x {pool.get('accelerator_type')}" if count else ""
        parts.append(f"{pool.get('replica_count', 1)} x {pool.get('machine_type')}{gpus}")
    return ", ".join(parts)


def job_shapes(props: Mapping[str, Any]) -> list[tuple[str, list[dict[str, Any]], str]]:
    """(name, pools, strategy) of the job's shape and of each fallback, in the order they are tried."""
    return [
        ("shape" if index == 0 else f"fallback {index}", placement.apply_shape(props, shape)["worker_pools"],
         shape.scheduling_strategy)
        for index, shape in enumerate(placement.shapes(props))
    ]  # fmt: skip


def shape_costs(props: Mapping[str, Any]) -> list[ShapeCost]:
    region, project = props["region"], props.get("project")
    return [
        ShapeCost(
            name,
            _machines(pools),
            strategy,
            pricing.shape_hourly(region, pools, strategy, project),
            tuple(pricing.missing(region, pools, strategy, project)),
        )
        for name, pools, strategy in job_shapes(props)
    ]


def worst_case_usd(props: Mapping[str, Any]) -> float | None:
    """The dearest shape for timeout_seconds, every replica; None when a shape has no price."""
    hourly = [cost.hourly for cost in shape_costs(props)]
    if not hourly or any(h is None for h in hourly):
        return None
    return round(max(h for h in hourly if h is not None) * float(props["timeout_seconds"]) / 3600.0, 2)


def ran_shape_hourly(outputs: Mapping[str, Any]) -> float | None:
    """Hourly price of the shape a previous run used: its `placement` where recorded, else its own."""
    ran = outputs.get("placement")
    primary = placement.primary_shape(outputs)
    shape = placement.resolve(ran, primary) if ran else primary
    pools = placement.apply_shape(outputs, shape)["worker_pools"]
    return pricing.shape_hourly(outputs["region"], pools, shape.scheduling_strategy, outputs.get("project"))


def expected_line(outputs: Mapping[str, Any]) -> str | None:
    """`expected USD 0.42: the previous run took 40m 10s at USD 0.62/h`, from a previous run's outputs."""
    seconds = outputs.get("duration_seconds")
    if not isinstance(seconds, int | float) or not seconds or "worker_pools" not in outputs:
        return None
    if outputs.get("state") != "JOB_STATE_SUCCEEDED":  # a capped or failed run says nothing of a whole one
        return None
    hourly = ran_shape_hourly(outputs)
    if hourly is None:
        return None
    return (
        f"expected cost USD {hourly * seconds / 3600.0:.2f}: the previous run took {duration_text(seconds)} "
        f"at USD {hourly:.2f}/h"
    )


def _known(props: Mapping[str, Any]) -> bool:
    """Every input the figures need is known (preview may not know them yet)."""
    # The pools' images and args are often unknown in a preview: only their shapes matter here.
    keys = (
        "region",
        "timeout_seconds",
        "fallbacks",
        "max_cost_usd",
        "scheduling_strategy",
        "spot",
        "project",
    )
    if any(is_unknown(props.get(key)) for key in keys):
        return False
    pools = props.get("worker_pools")
    return isinstance(pools, list) and all(
        isinstance(pool, Mapping)
        and not any(
            is_unknown(pool.get(k))
            for k in ("machine_type", "accelerator_type", "accelerator_count", "replica_count")
        )
        for pool in pools
    )


def preview_lines(props: Mapping[str, Any]) -> list[str]:
    """The cost lines `check` prints for a Vertex job; a worst case over max_cost_usd is a WARNING line."""
    if props.get("runner") != "vertex" or not _known(props):
        return []
    timeout = float(props["timeout_seconds"])
    lines = []
    for cost in shape_costs(props):
        head = f"cost of {cost.name}: {cost.machines} ({cost.strategy})"
        if cost.hourly is None:
            lines.append(f"{head}: no price for {', '.join(cost.missing)}, so no estimate")
        else:
            lines.append(
                f"{head}: USD {cost.hourly:.2f}/h, USD {cost.hourly * timeout / 3600.0:.2f} for "
                f"timeout_seconds {int(timeout)}"
            )
    worst = worst_case_usd(props)
    cap = props.get("max_cost_usd")
    cap_text = f"; max_cost_usd USD {float(cap):.2f}" if cap is not None else ""
    if worst is not None:
        lines.append(f"worst case USD {worst:.2f} (list prices, all attempts){cap_text}")
    unpriced = [cost.name for cost in shape_costs(props) if cost.hourly is None]
    if cap is not None and unpriced:
        lines.append(
            f"WARNING: max_cost_usd USD {float(cap):.2f} is not enforced while the job runs on "
            f"{', '.join(unpriced)}: no price (above), so that running time is not counted"
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
    return lines


# A study has no max_cost_usd (tuning_spec.SINGLE_JOB_INPUTS): say so where the cost is shown.
STUDY_CAP_LINE = (
    "WARNING: no dollar cap on the study: maxCostUsd caps the training job only; the study stops at "
    "max_trial_count x timeout_seconds, or when the budget kill switch cancels it"
)


def study_preview_lines(props: Mapping[str, Any]) -> list[str]:
    """The cost lines of a tuning job: a trial's hourly price on each shape it may run on, and the study's
    worst case, every trial of max_trial_count running its timeout_seconds on the dearest shape (as a
    CustomJob's worst case: trials x shape x time)."""
    trials = props.get("max_trial_count")
    if props.get("runner") != "vertex" or not _known(props) or not isinstance(trials, int):
        return []
    lines = []
    costs = shape_costs(props)
    for cost in costs:
        where = "" if cost.name == "shape" else f" on {cost.name}"
        head = f"cost of a trial{where}: {cost.machines} ({cost.strategy})"
        if cost.hourly is None:
            lines.append(f"{head}: no price for {', '.join(cost.missing)}, so no estimate")
        else:
            lines.append(f"{head}: USD {cost.hourly:.2f}/h")
    hourly = [cost.hourly for cost in costs]
    if all(h is not None for h in hourly):
        timeout = float(props["timeout_seconds"])
        worst = max(h for h in hourly if h is not None) * timeout / 3600.0 * trials
        lines.append(
            f"worst case USD {worst:.2f}: {trials} trials x timeout_seconds {int(timeout)} (list prices)"
        )
    return [*lines, STUDY_CAP_LINE]
