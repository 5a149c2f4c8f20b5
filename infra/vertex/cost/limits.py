"""Which shapes a job's price limits (maxCostUsd, maxHourlyUsd, allowUnpricedShapes) let it run on; a Spot
or FLEX_START shape without its own price is judged by its on-demand bound. Local runs bill nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.capacity import placement
from infra.vertex.capacity.placement import Pool, Shape
from infra.vertex.cost import pricing

# The keys a fallback entry may carry besides its shape (placement.SHAPE_KEYS).
FALLBACK_LIMIT_KEYS = ("max_hourly_usd",)
# The stack keys each limit comes from, named in skip lines and fixes.
STACK_KEYS = {
    "max_cost_usd": "maxCostUsd",
    "max_hourly_usd": "maxHourlyUsd",
    "allow_unpriced_shapes": "allowUnpricedShapes",
}


@dataclass(frozen=True)
class Verdict:
    """One shape under the job's limits: its hourly figure (None: no price) and why it is skipped."""

    rate: pricing.Rate | None
    missing: tuple[str, ...]  # what has no price, e.g. `NVIDIA_L4 (us-central1, SPOT)`
    skipped: str | None = None  # None: in the chain
    key: str | None = None  # the provider input that skips it: max_hourly_usd or max_cost_usd


def home_index(fallbacks: int, index: int, chain: Sequence[Shape]) -> int:
    """The place in the home chain (0: the job, i: fallbacks[i - 1]) of chain[index], a shape that may be
    the home chain's moved to a fallback region (placement.chain_of: the home chain comes first)."""
    if index < 1 + fallbacks:
        return index
    home = list(chain[: 1 + fallbacks])
    moved = replace(chain[index], region=chain[0].region)
    return home.index(moved) if moved in home else 0


def ceiling(
    props: Mapping[str, Any],
    index: int,
    chain: list[Shape] | None = None,
    machines: Sequence[Pool] | None = None,
) -> float | None:
    """The hourly ceiling of chain[index] of a job's props (ceiling_of); `machines`: placement.pools."""
    chain = placement.shapes(props, machines) if chain is None else chain
    top = props.get("max_hourly_usd")
    return ceiling_of(None if top is None else float(top), props.get("fallbacks") or [], index, chain)


def ceiling_of(
    top: float | None, fallbacks: Sequence[Mapping[str, Any]], index: int, chain: Sequence[Shape]
) -> float | None:
    """The hourly ceiling of chain[index]: its fallback entry's max_hourly_usd, else the job's (`top`)."""
    if top is None and all(entry.get("max_hourly_usd") is None for entry in fallbacks):
        return None  # no ceiling anywhere: no need to find the shape's entry
    entries: list[Mapping[str, Any]] = [{}, *fallbacks]
    at = home_index(len(fallbacks), index, chain)
    own = entries[at].get("max_hourly_usd") if at < len(entries) else None
    found = own if own is not None else top
    return None if found is None else float(found)


def limited(props: Mapping[str, Any]) -> bool:
    """The job runs on Vertex (local runs bill nothing)."""
    return bool(props.get("runner", "vertex") == "vertex")


def verdict(
    props: Mapping[str, Any],
    index: int,
    shape: Shape,
    chain: list[Shape] | None = None,
    machines: Sequence[Pool] | None = None,
) -> Verdict:
    """chain[index] (= `shape`) under the job's limits, from the job's props (check, preview, plan);
    `machines`: a kind's typed pools (placement.pools)."""
    (region, pools), strategy = placement.on_shape(props, shape, machines), shape.scheduling_strategy
    project = props.get("project")
    rate = pricing.shape_rate(region, pools, strategy, project)
    missing = partial(pricing.missing, region, pools, strategy, project)
    if not limited(props):
        return Verdict(rate, tuple(missing()) if rate is None else ())
    capped = props.get("max_cost_usd") is not None
    allow = bool(props.get("allow_unpriced_shapes"))
    return judged(ceiling(props, index, chain, machines), capped, allow, strategy, rate, missing)


def judged(
    top: float | None,
    capped: bool,
    allow_unpriced: bool,
    strategy: str,
    rate: pricing.Rate | None,
    find_missing: Callable[[], Iterable[str]],
) -> Verdict:
    """A shape of a job on Vertex under its ceiling `top`, its dollar cap (`capped`) and
    allow_unpriced_shapes."""
    missing = () if rate is not None else tuple(find_missing())
    if rate is not None and top is not None and rate.usd > top:
        figure = (
            f"its on-demand price USD {rate.usd:.2f}/h (the bound of a {strategy} price)"
            if rate.bound
            else (f"its price USD {rate.usd:.2f}/h")
        )
        return Verdict(rate, missing, f"{figure} is above max_hourly_usd USD {top:.2f}", "max_hourly_usd")
    if rate is None and not allow_unpriced:
        what = ", ".join(missing) or "an item"
        if capped:
            why = f"no sourced price for {what}: max_cost_usd could not count its running time"
            return Verdict(
                rate, missing, f"{why} (allowUnpricedShapes: true runs it uncounted)", "max_cost_usd"
            )
        if top is not None:
            why = f"no sourced price for {what}: max_hourly_usd USD {top:.2f} cannot be held on it"
            return Verdict(rate, missing, f"{why} (allowUnpricedShapes: true runs it)", "max_hourly_usd")
    return Verdict(rate, missing)


def skip_reason(found: Verdict) -> str:
    """Why a shape is skipped, its key first (`maxCostUsd (max_cost_usd): no sourced price for ...`): the
    attempt's reason, so the one line that moves past it names the key, the shape and why."""
    key = found.key or "max_cost_usd"
    return f"{STACK_KEYS[key]} ({key}): {found.skipped}"


def chain_known(props: Mapping[str, Any]) -> bool:
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
        "fallback_regions",
        "reservation_affinity",
        "max_hourly_usd",
        "allow_unpriced_shapes",
    )
    if any(is_unknown(props.get(key)) for key in keys):
        return False
    if "worker_pools" not in props:  # a job with its own machine keys (batch/kind.py: spec.body(props).pools)
        return not any(is_unknown(props.get(k)) for k in (*placement.MACHINE_KEYS, "max_replica_count"))
    pools = props.get("worker_pools")
    return isinstance(pools, list) and all(
        isinstance(pool, Mapping)
        and not any(is_unknown(pool.get(k)) for k in (*placement.MACHINE_KEYS, "replica_count"))
        for pool in pools
    )


def _listed(value: Any) -> list[Any]:
    """The list, else [] (a preview may not know it yet)."""
    return value if isinstance(value, list) else []


def value_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """max_hourly_usd (the job's, each fallback's) a positive number; allow_unpriced_shapes a boolean."""
    failures = []
    for where, value in [
        ("max_hourly_usd", props.get("max_hourly_usd")),
        *(
            (f"fallbacks[{i}].max_hourly_usd", entry.get("max_hourly_usd"))
            for i, entry in enumerate(_listed(props.get("fallbacks")))
            if isinstance(entry, Mapping)
        ),
    ]:
        if value is None or is_unknown(value):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            failures.append(
                (where, f"{where} must be a positive number of US dollars per hour, not {value!r}")
            )
    allow = props.get("allow_unpriced_shapes")
    if allow is not None and not is_unknown(allow) and not isinstance(allow, bool):
        failures.append(
            ("allow_unpriced_shapes", f"allow_unpriced_shapes must be true or false, not {allow!r}")
        )
    return failures


def failures(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> list[tuple[str, str]]:
    """The chain left with no shape under the limits, as one check failure naming the cheapest shape."""
    fallbacks = _listed(props.get("fallbacks"))
    ceilings = [props.get("max_hourly_usd")] + [
        entry.get("max_hourly_usd") for entry in fallbacks if isinstance(entry, Mapping)
    ]
    capped = props.get("max_cost_usd") is not None or any(c is not None for c in ceilings)
    if not limited(props) or not capped or not chain_known(props):
        return []
    chain = placement.shapes(props, machines)
    verdicts = [verdict(props, index, shape, chain, machines) for index, shape in enumerate(chain)]
    if not verdicts or any(found.skipped is None for found in verdicts):
        return []
    priced = [(found.rate.usd, shape) for found, shape in zip(verdicts, chain, strict=True) if found.rate]
    if priced:
        usd, cheapest = min(priced, key=lambda pair: pair[0])
        return [
            (
                "max_hourly_usd",
                f"every shape of the chain is above max_hourly_usd (or has no price): the cheapest is "
                f"{cheapest.where()} at USD {usd:.2f}/h; raise maxHourlyUsd to at least {usd:.2f} or add a "
                "cheaper fallback (`make plan` shows each shape's price)",
            )
        ]
    return [
        (
            "max_cost_usd",
            "no shape of the chain has a sourced price, so max_cost_usd could not count any running time "
            f"(no price for {', '.join(dict.fromkeys(m for found in verdicts for m in found.missing))}); "
            "set allowUnpricedShapes: true to run them uncounted, or pick a shape with a price (`make plan` "
            "shows each shape's)",
        )
    ]
