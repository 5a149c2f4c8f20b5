"""Capacity keys: machine shapes (family and accelerator must fit), the training job's scheduling strategy
and fallback shapes; checked with the CustomJob's own rules, which live once in
infra/vertex/custom_job/spec.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.config.reader import ConfigError, Reader

KEYS = ("schedulingStrategy", "maxWaitSeconds", "fallbacks")
STRATEGIES = ("STANDARD", "SPOT", "FLEX_START")
# A fallback entry's YAML keys and the CustomJob's fallback keys they become.
FALLBACK_KEYS = {
    "machineType": "machine_type",
    "acceleratorType": "accelerator_type",
    "acceleratorCount": "accelerator_count",
    "schedulingStrategy": "scheduling_strategy",
}
_FIX = "see docs/training-job-resource.md, 'Getting a GPU: scheduling strategies and fallback shapes'"


@dataclass(frozen=True)
class CapacityConfig:
    """How the training job gets its machines: strategy (None: from `spot`), FLEX_START wait, fallbacks."""

    scheduling_strategy: str | None = None
    max_wait_seconds: int | None = None
    fallbacks: tuple[Mapping[str, Any], ...] = ()

    def job_args(self, spot: bool) -> dict[str, Any]:
        """The CustomJob args these settings give (spot is said by the strategy)."""
        return {
            "spot": None,
            "scheduling_strategy": self.scheduling_strategy or ("SPOT" if spot else "STANDARD"),
            "max_wait_seconds": self.max_wait_seconds,
            "fallbacks": [dict(entry) for entry in self.fallbacks] or None,
        }


def check_machine(keys: tuple[str, str, str], machine: str, accelerator: str | None, count: int) -> None:
    """Family/accelerator compatibility via the CustomJob resource's own validator (the rules live once)."""
    from infra.vertex.custom_job.spec import validate

    pool = {"machine_type": machine, "accelerator_type": accelerator, "accelerator_count": count}
    probe = {
        "runner": "local",
        "display_name": "config-check",
        "base_output_dir": "config-check",
        "timeout_seconds": 1,
        "worker_pools": [{**pool, "image_uri": "config-check", "command": ["true"]}],
    }
    fields = dict(zip(("machine_type", "accelerator_type", "accelerator_count"), keys, strict=True))
    for prop, reason in validate({k: v for k, v in probe.items() if v is not None}):
        field = prop.rsplit(".", 1)[-1]
        if field in fields:
            raise ConfigError(
                fields[field], reason, "pick a matching machine type and accelerator (docs/stack.md)"
            )


def _fallback(index: int, entry: Any) -> dict[str, Any]:
    key = f"fallbacks[{index}]"
    if not isinstance(entry, Mapping) or not entry:
        raise ConfigError(key, f"must be a map of {', '.join(FALLBACK_KEYS)}, got {entry!r}", _FIX)
    unknown = sorted(set(entry) - set(FALLBACK_KEYS))
    if unknown:
        raise ConfigError(
            key, f"has unknown keys {unknown}; a fallback takes {', '.join(FALLBACK_KEYS)}", _FIX
        )
    return {FALLBACK_KEYS[k]: v for k, v in entry.items()}


def read_capacity(
    read: Reader,
    *,
    spot: bool,
    chief: tuple[str, str | None, int],
    worker_count: int,
    timeout_seconds: int,
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
            "set only one of them (spot: true means schedulingStrategy SPOT)",
        )
    max_wait = read.number("maxWaitSeconds", None, int, "3600")
    fallbacks = tuple(_fallback(i, entry) for i, entry in enumerate(read.list("fallbacks", (), "{}")))
    probe = {
        "runner": "local",
        "display_name": "config-check",
        "base_output_dir": "config-check",
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
        "fallbacks": [dict(entry) for entry in fallbacks],
    }
    keys = {"scheduling_strategy": "schedulingStrategy", "max_wait_seconds": "maxWaitSeconds"}
    for prop, reason in validate(with_defaults(probe)):
        name = prop.split(".", 1)[0]
        if name in keys or name.startswith("fallbacks"):
            raise ConfigError(keys.get(name, name), reason, _FIX)
    return CapacityConfig(strategy, max_wait, fallbacks)
