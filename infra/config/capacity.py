"""Capacity keys: machine shapes (family and accelerator must fit), the training job's scheduling strategy,
fallback shapes (each may name a region and a reservation), fallback regions, a reservation for the job, and
how long to keep looking for machines; checked on the shapes they make with the CustomJob's own rules, which
live once in infra/vertex/custom_job/chain.py and capacity/ (shape_checks.py, reservations.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.config.reader import NAMESPACE, ConfigError, Reader, raise_all, set_fix
from infra.vertex.capacity.machines import STRATEGIES

KEYS = (
    "schedulingStrategy",
    "maxWaitSeconds",
    "fallbacks",
    "fallbackRegions",
    "reservationAffinity",
    "capacityDeadlineSeconds",
)
# A fallback entry's YAML keys and the CustomJob's fallback keys they become.
FALLBACK_KEYS = {
    "machineType": "machine_type",
    "acceleratorType": "accelerator_type",
    "acceleratorCount": "accelerator_count",
    "schedulingStrategy": "scheduling_strategy",
    "region": "region",
    "reservationAffinity": "reservation_affinity",
    "maxHourlyUsd": "max_hourly_usd",  # this shape's hourly ceiling, over the job's (cost/limits.py)
}
# reservationAffinity's YAML keys (the same on the job and in a fallback) and the CustomJob's.
RESERVATION_KEYS = {"type": "type", "reservation": "reservation"}
# The CustomJob properties the chain's rules name (custom_job/chain.py) and their stack keys; a fallback's
# problems name its entry (fallbacks[1]).
_CHAIN_KEYS = {
    "scheduling_strategy": "schedulingStrategy",
    "reservation_affinity": "reservationAffinity",
    "max_wait_seconds": "maxWaitSeconds",
}
_FIX = "see docs/training-job-resource.md, 'Getting a GPU: scheduling strategies and fallback shapes'"


@dataclass(frozen=True)
class CapacityConfig:
    """How the training job gets its machines: strategy (None: from `spot`), FLEX_START wait, fallbacks."""

    scheduling_strategy: str | None = None
    max_wait_seconds: int | None = None
    fallbacks: tuple[Mapping[str, Any], ...] = ()
    fallback_regions: tuple[str, ...] = ()
    reservation_affinity: Mapping[str, str] | None = None
    capacity_deadline_seconds: int = 0

    def job_args(self, spot: bool) -> dict[str, Any]:
        """The CustomJob args these settings give (spot is said by the strategy)."""
        return {
            "spot": None,
            "scheduling_strategy": self.scheduling_strategy or ("SPOT" if spot else "STANDARD"),
            "max_wait_seconds": self.max_wait_seconds,
            "fallbacks": [dict(entry) for entry in self.fallbacks] or None,
            "fallback_regions": list(self.fallback_regions) or None,
            "reservation_affinity": dict(self.reservation_affinity) if self.reservation_affinity else None,
            "capacity_deadline_seconds": self.capacity_deadline_seconds or None,
        }

    def regions(self, home: str) -> list[str]:
        """Every region a job of this stack may run in, the home region first (the kill switch looks in
        each)."""
        named = [str(entry["region"]) for entry in self.fallbacks if entry.get("region")]
        return list(dict.fromkeys([home, *named, *self.fallback_regions]))


def check_machine(keys: tuple[str, str, str], machine: str, accelerator: str | None, count: int) -> None:
    """Family/accelerator compatibility: the machine as a Shape, checked by the rule every job kind's check
    runs (capacity/shape_checks.py machine_failures: the rules live once)."""
    from infra.vertex.capacity.placement import Shape
    from infra.vertex.capacity.shape_checks import machine_failures

    shape = Shape(machine, accelerator or None, count, "STANDARD")
    fields = dict(zip(("machine_type", "accelerator_type", "accelerator_count"), keys, strict=True))
    for field, reason in machine_failures("", shape):
        if field in fields:
            fix = (
                _count_fix(fields, machine, accelerator, count)
                if field == "accelerator_count" and accelerator and count
                else _machine_fix(fields["machine_type"], accelerator, count)
                if field == "machine_type"
                else "pick a matching machine type and accelerator (docs/stack.md)"
            )
            raise ConfigError(fields[field], reason, fix)


def _count_fix(fields: dict[str, str], machine: str, accelerator: str, count: int) -> str:
    """The count nearest `count` that `machine` takes, as a command; the machine types that take `count`."""
    from infra.vertex.capacity.machines import accelerator_counts

    counts = accelerator_counts(machine, accelerator) or ()
    if not counts:
        return _machine_fix(fields["machine_type"], accelerator, count)
    nearest = min(counts, key=lambda c: (abs(c - count), -c))
    others = _fits(accelerator, count)
    takes = f"{machine} takes {', '.join(map(str, counts))}"
    elsewhere = f"; {', '.join(others)} take {count}" if others else f"; no machine type takes {count}"
    return f"{set_fix(fields['accelerator_count'], str(nearest))} ({takes}{elsewhere})"


def _fits(accelerator: str, count: int) -> list[str]:
    """The machine types the machine facts list as taking `count` x `accelerator`."""
    from infra.vertex.capacity.machines import KNOWN_MACHINE_TYPES, machine_family
    from infra.vertex.capacity.shape_checks import gpu_failures

    return sorted(
        (m for m in KNOWN_MACHINE_TYPES if not gpu_failures("", m, accelerator, count)),
        key=lambda m: (machine_family(m), len(m), m),
    )


def _machine_fix(key: str, accelerator: str | None, count: int) -> str:
    """The machine types that take `count` x `accelerator` (the machine facts), the first as a command."""
    if not accelerator:
        return "pick a matching machine type and accelerator (docs/stack.md)"
    fits = _fits(accelerator, count)
    if not fits:
        return f"pick a machine type that takes {count} x {accelerator} (docs/stack.md)"
    return f"{set_fix(key, fits[0])} (machine types that take {count} x {accelerator}: {', '.join(fits)})"


def _reservation(key: str, value: Any) -> dict[str, Any]:
    """A reservationAffinity map with its keys as the CustomJob takes them (values checked by spec.py)."""
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(key, f"must be a map of {', '.join(RESERVATION_KEYS)}, got {value!r}", _FIX)
    unknown = sorted(set(value) - set(RESERVATION_KEYS))
    if unknown:
        raise ConfigError(key, f"has unknown keys {unknown}; it takes {', '.join(RESERVATION_KEYS)}", _FIX)
    return {RESERVATION_KEYS[k]: v for k, v in value.items()}


def _fallback(index: int, entry: Any, stack: str) -> dict[str, Any]:
    key = f"fallbacks[{index}]"
    if not isinstance(entry, Mapping) or not entry:
        raise ConfigError(key, f"must be a map of {', '.join(FALLBACK_KEYS)}, got {entry!r}", _FIX)
    unknown = sorted(set(entry) - set(FALLBACK_KEYS))
    if unknown:
        raise ConfigError(
            key, f"has unknown keys {unknown}; a fallback takes {', '.join(FALLBACK_KEYS)}", _FIX
        )
    found = {FALLBACK_KEYS[k]: v for k, v in entry.items()}
    ceiling = found.get("max_hourly_usd")
    if ceiling is not None and (
        isinstance(ceiling, bool) or not isinstance(ceiling, int | float) or ceiling <= 0
    ):
        raise ConfigError(
            f"{key}.maxHourlyUsd",
            f"must be a positive number of US dollars per hour (this shape is skipped when its price is "
            f"above it), got {ceiling!r}",
            f"run `pulumi config set --stack {stack} --path '{NAMESPACE}:fallbacks[{index}].maxHourlyUsd' 2`",
        )
    if "reservation_affinity" in found:
        found["reservation_affinity"] = _reservation(
            f"{key}.reservationAffinity", found["reservation_affinity"]
        )
    return found


def read_capacity(
    read: Reader,
    *,
    spot: bool,
    chief: tuple[str, str | None, int],
    worker_count: int,
    timeout_seconds: int,
    region: str,
    stack: str = "<stack>",
) -> CapacityConfig:
    """The capacity keys, checked against the training job's pools (`chief`: machine type, accelerator type
    and count; the workers are copies of it) as the CustomJob checks them (custom_job/chain.py)."""
    from infra.vertex.custom_job import chain

    strategy = read.str("schedulingStrategy", "SPOT" if spot else "STANDARD", "SPOT", STRATEGIES)
    assert strategy is not None  # read.str with a default
    if (
        read.raw("spot") is not None
        and read.raw("schedulingStrategy") is not None
        and spot != (strategy == "SPOT")
    ):
        raise ConfigError(
            "schedulingStrategy",
            f"is {strategy} but spot is {str(spot).lower()}",
            "set only one of them (spot: true means schedulingStrategy SPOT): "
            f"`pulumi config rm {NAMESPACE}:spot`",
        )
    max_wait = read.number("maxWaitSeconds", None, int, "3600")
    fallbacks = tuple(_fallback(i, e, stack) for i, e in enumerate(read.list("fallbacks", (), None)))
    fallback_regions = tuple(read.list("fallbackRegions", (), ("us-east4",)))
    raw_reservation = read.raw("reservationAffinity")
    reservation = (
        _reservation("reservationAffinity", raw_reservation) if raw_reservation is not None else None
    )
    deadline = read.number("capacityDeadlineSeconds", 0, int, "7200")
    failures = [
        *_named("maxWaitSeconds", chain.max_wait_failures(max_wait) if max_wait is not None else []),
        *_named("fallbackRegions", chain.regions_failures(region, fallback_regions)),
        *_named("capacityDeadlineSeconds", chain.deadline_failures(deadline)),
        *_shape_failures(
            chief, worker_count, timeout_seconds, region, strategy, max_wait, fallbacks, reservation
        ),
    ]
    # Every shape's problems at once; a fallback that only inherits a problem of the job's own settings (its
    # reservation, say) does not repeat it.
    found: dict[str, ConfigError] = {}
    for key, reason in failures:
        if reason.removeprefix(f"{key}.") not in found:
            found[reason] = ConfigError(key, reason, _FIX)
    raise_all(list(found.values()))
    return CapacityConfig(strategy, max_wait, fallbacks, fallback_regions, reservation, deadline)


def _named(key: str, failures: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Failures as (stack key, reason)."""
    return [(key, reason) for _prop, reason in failures]


def _shape_failures(
    chief: tuple[str, str | None, int],
    worker_count: int,
    timeout_seconds: int,
    region: str,
    strategy: str,
    max_wait: int | None,
    fallbacks: tuple[Mapping[str, Any], ...],
    reservation: Mapping[str, Any] | None,
) -> list[tuple[str, str]]:
    """The training job's shapes (the chief's machine on the job's strategy, each fallback resolved from it)
    under the CustomJob's rules (custom_job/chain.py), each problem as (stack key, reason)."""
    from infra.vertex.capacity.placement import Shape
    from infra.vertex.capacity.reservations import parse_affinity
    from infra.vertex.capacity.shape_checks import fallback_shape
    from infra.vertex.custom_job import chain

    machine_type, accelerator_type, count = chief
    affinity, bad = parse_affinity("reservation_affinity", reservation)
    primary = Shape(machine_type, accelerator_type or None, count, strategy, region, affinity)
    failures = [(_key(prop), reason) for prop, reason in bad]
    found = [fallback_shape(f"fallbacks[{i}]", entry, primary) for i, entry in enumerate(fallbacks)]
    job = chain.Chain(
        primary=primary,
        fallbacks=tuple(shape for _bad, shape in found),
        # The workers copy the chief: a CPU chief's workers keep its machine type whatever the shape.
        kept_pools=(machine_type,) if worker_count and not count else (),
        timeout_seconds=timeout_seconds,
        max_wait_seconds=max_wait,
    )
    refused = [bad for bad, _shape in found]
    return failures + [(_key(prop), reason) for prop, reason in chain.chain_failures(job, refused)]


def _key(prop: str) -> str:
    """The stack key of a property the chain's rules name: `fallbacks[1]` for `fallbacks[1].region`."""
    top = prop.split(".", 1)[0]
    return _CHAIN_KEYS.get(top, top)
