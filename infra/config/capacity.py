"""Capacity keys: machine shapes (family and accelerator must fit), the training job's scheduling strategy,
fallback shapes (each may name a region and a reservation), fallback regions, a reservation for the job, and
how long to keep looking for machines; checked with the CustomJob's own rules, which live once in
infra/vertex/custom_job/spec.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.config.reader import NAMESPACE, ConfigError, Reader, raise_all
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
    runs (lifecycle/checks.py machine_failures: the rules live once)."""
    from infra.vertex.capacity.placement import Shape
    from infra.vertex.lifecycle.checks import machine_failures

    shape = Shape(machine, accelerator or None, count, "STANDARD")
    fields = dict(zip(("machine_type", "accelerator_type", "accelerator_count"), keys, strict=True))
    for field, reason in machine_failures(shape):
        if field in fields:
            fix = (
                f"set {fields[field]} to a count {machine} takes, or pick a machine type for {count} "
                f"(docs/stack.md)"
                if field == "accelerator_count" and accelerator and count
                else "pick a matching machine type and accelerator (docs/stack.md)"
            )
            raise ConfigError(fields[field], reason, fix)


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
    and count; the workers are copies of it) as the CustomJob checks them."""
    from infra.vertex.custom_job.spec import validate, with_defaults

    machine = dict(zip(("machine_type", "accelerator_type", "accelerator_count"), chief, strict=True))
    pools = [machine] + ([{**machine, "replica_count": worker_count}] if worker_count else [])

    strategy = read.str("schedulingStrategy", "SPOT" if spot else "STANDARD", "SPOT", STRATEGIES)
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
    probe = {
        # The vertex runner's rules (regions, reservations, strategies), on a probe job.
        "runner": "vertex",
        "project": "config-check",
        "region": region,
        "service_account": "config-check",
        "base_output_dir": "gs://config-check",
        "display_name": "config-check",
        "timeout_seconds": timeout_seconds,
        "worker_pools": [
            {
                **{k: v for k, v in pool.items() if v is not None},
                "image_uri": "config-check",
                "command": ["true"],
            }
            for pool in pools
        ],
        "scheduling_strategy": strategy,
        "max_wait_seconds": max_wait,
        # The hourly ceilings are checked above; the probe prices nothing (the chain's prices are the
        # provider's check, with the Billing Catalog of the stack's project).
        "fallbacks": [{k: v for k, v in entry.items() if k != "max_hourly_usd"} for entry in fallbacks],
        "fallback_regions": list(fallback_regions),
        "reservation_affinity": reservation,
        "capacity_deadline_seconds": deadline,
    }
    keys = {
        "scheduling_strategy": "schedulingStrategy",
        "max_wait_seconds": "maxWaitSeconds",
        "fallback_regions": "fallbackRegions",
        "reservation_affinity": "reservationAffinity",
        "capacity_deadline_seconds": "capacityDeadlineSeconds",
        # A rule of the chief's own shape (where a GPU is offered is a preview warning, not a check).
        "worker_pools": "acceleratorType",
    }
    # Every shape's problems at once (each fallback is checked as the CustomJob checks it); a fallback that
    # only inherits a problem of the job's own settings (its reservation, say) does not repeat it.
    found: dict[str, ConfigError] = {}
    for prop, reason in validate(with_defaults({k: v for k, v in probe.items() if v is not None})):
        name = prop.split(".", 1)[0].split("[", 1)[0]
        inherited = reason.removeprefix(prop.split(".", 1)[0] + ".")
        if (name in keys or name.startswith("fallbacks")) and inherited not in found:
            found[reason] = ConfigError(keys.get(name, prop.split(".", 1)[0]), reason, _FIX)
    raise_all(list(found.values()))
    return CapacityConfig(strategy, max_wait, fallbacks, fallback_regions, reservation, deadline)
