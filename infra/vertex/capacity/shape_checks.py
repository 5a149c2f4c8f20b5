"""The rules of one machine shape, written once for every job kind and the stack's configuration: a
machine's GPU (type, count, fit with its family: machines.py's facts) and a fallback entry's values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.cloud import aiplatform_v1

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.capacity.machines import (
    FAMILY_ACCELERATORS,
    GPU_FAMILIES,
    MACHINE_SHAPES,
    STRATEGIES,
    accelerator_counts,
    counts_text,
    machine_family,
    n1_vcpu_limit,
)
from infra.vertex.capacity.placement import Shape, resolve
from infra.vertex.capacity.reservations import parse_affinity, region_failures

# (property, reason); `where` prefixes the property ("worker_pools[0]", "fallbacks[1]"; "": the job's own).
Failures = list[tuple[str, str]]
ACCELERATOR_TYPES = frozenset(
    name
    for name in aiplatform_v1.AcceleratorType.__members__
    if name != "ACCELERATOR_TYPE_UNSPECIFIED" and not name.startswith("TPU_")
)


def machine_failures(where: str, shape: Shape) -> Failures:
    """The GPU rules (gpu_failures) of a shape's machine."""
    return gpu_failures(where, shape.machine_type, shape.accelerator_type, shape.accelerator_count)


def accelerator_failures(where: str, machine: Mapping[str, Any]) -> Failures:
    """gpu_failures of a machine given as a map (a worker pool, a batch job's own keys); unknown preview
    values skip it, and a count that is not a whole number >= 0 is the one problem named."""
    if any(is_unknown(machine.get(k)) for k in ("machine_type", "accelerator_type", "accelerator_count")):
        return []
    count = machine.get("accelerator_count", 0)
    if bad := count_failures(where, count):
        return bad
    machine_type = machine.get("machine_type")
    return gpu_failures(
        where,
        machine_type if isinstance(machine_type, str) else None,
        machine.get("accelerator_type"),
        count,
    )


def count_failures(where: str, count: object) -> Failures:
    """A machine's accelerator_count that is not a whole number >= 0 (checked before it makes a Shape)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        prefix = f"{where}." if where else ""
        return [
            (f"{prefix}accelerator_count", f"accelerator_count must be a non-negative integer, not {count!r}")
        ]
    return []


def gpu_failures(where: str, machine_type: str | None, kind: str | None, count: int) -> Failures:
    """A machine's GPU type, count and fit with its family and machine type (machines.FAMILY_ACCELERATORS,
    accelerator_counts, N1's vCPU limits); no machine type (None, ""): only the GPU's own rules."""
    where = f"{where}." if where else ""
    if count and not kind:
        return [(f"{where}accelerator_type", f"accelerator_count is {count} but accelerator_type is not set")]
    if kind and kind not in ACCELERATOR_TYPES:
        return [
            (
                f"{where}accelerator_type",
                f"unknown accelerator_type {kind!r}; use one of {', '.join(sorted(ACCELERATOR_TYPES))}",
            )
        ]
    if kind and not count:
        return [(f"{where}accelerator_count", f"accelerator_type is {kind} but accelerator_count is 0")]
    if not machine_type:
        return []
    family = machine_family(machine_type)
    if kind and kind not in FAMILY_ACCELERATORS.get(family, frozenset()):
        fits = sorted(f for f, kinds in FAMILY_ACCELERATORS.items() if kind in kinds)
        return [
            (
                f"{where}machine_type",
                f"machine type {machine_type} (family {family}) cannot take {kind}; {kind} needs a "
                f"{' or '.join(fits)} machine type",
            )
        ]
    if not kind and family in GPU_FAMILIES:
        return [
            (
                f"{where}accelerator_type",
                f"machine type {machine_type} comes with GPUs: set accelerator_type and accelerator_count",
            )
        ]
    counts = accelerator_counts(machine_type, kind) if kind else None
    if counts is not None and count not in counts:
        reason = f"machine type {machine_type} takes {counts_text(counts)} {kind}, not {count}"
        limit = n1_vcpu_limit(str(kind), count)
        if limit is not None and machine_type in MACHINE_SHAPES:
            vcpus = MACHINE_SHAPES[machine_type][0]
            reason += f" (with {count} {kind} an N1 machine type has at most {limit} vCPUs; "
            reason += f"{machine_type} has {vcpus})"
        return [(f"{where}accelerator_count", reason)]
    return []


def entry_failures(
    where: str, entry: Mapping[str, Any], strategies: tuple[str, ...] = STRATEGIES
) -> Failures:
    """A fallback entry's values of the wrong type, checked before the entry becomes a shape
    (placement.resolve): its strings, its region id, its GPU count, and its strategy (one of `strategies`)."""
    failures = []
    for key in ("machine_type", "accelerator_type", "scheduling_strategy"):
        if key in entry and not (isinstance(entry[key], str) and entry[key]):
            failures.append((where, f"{where}.{key} must be a non-empty string, not {entry[key]!r}"))
    if "region" in entry:
        failures.extend(region_failures(f"{where}.region", entry["region"]))
    count = entry.get("accelerator_count", 0)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        failures.append((where, f"{where}.accelerator_count must be a whole number >= 0, not {count!r}"))
    strategy = entry.get("scheduling_strategy")
    if not failures and strategy is not None and strategy not in strategies:
        failures.append((where, f"{where}.scheduling_strategy must be one of {', '.join(strategies)}"))
    return failures


def fallback_shape(where: str, entry: Mapping[str, Any], primary: Shape) -> tuple[Failures, Shape | None]:
    """A fallback entry as the shape it makes from the primary (placement.resolve), or, and no shape, what is
    wrong with its values (entry_failures, the form of its reservation_affinity)."""
    _, bad = parse_affinity(where, entry.get("reservation_affinity"))
    if bad := entry_failures(where, entry) + bad:
        return bad, None
    return [], resolve(entry, primary)
