"""A training job's (and its trials') capacity rules on typed values, run by spec.py `validate` and by the
stack's configuration (infra/config/capacity.py); each failure names the CustomJob's field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from infra.vertex.capacity import placement
from infra.vertex.capacity.machines import FLEX_START_ACCELERATORS
from infra.vertex.capacity.placement import Shape
from infra.vertex.capacity.reservations import region_failures, reservation_failures
from infra.vertex.capacity.shape_checks import Failures, machine_failures
from infra.vertex.lifecycle.checks import seconds_value_failures

# Dynamic Workload Scheduler (FLEX_START) for training, per https://cloud.google.com/vertex-ai/docs/training/
# schedule-jobs-dws (read 2026-11-22): the GPUs of machines.FLEX_START_ACCELERATORS, a timeout of at most 7
# days, the same machine configuration in every worker pool (its wait: lifecycle/waiting.py).
FLEX_START_MAX_TIMEOUT_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class Chain:
    """A training job's shapes as the rules read them."""

    primary: Shape  # the chief's machine, the job's strategy, its home region ("": none) and reservation
    fallbacks: tuple[Shape | None, ...] = ()  # each entry resolved (placement.resolve); None: refused as read
    # The machine types of the pools a shape leaves as they are: CPU pools other than the chief.
    kept_pools: tuple[str, ...] = ()
    timeout_seconds: float | None = None
    max_wait_seconds: int | None = None  # as given (FLEX_START only)


def chain_failures(chain: Chain, refused: Sequence[Failures] = ()) -> Failures:
    """Every shape's problems in order: the primary's, each fallback's (fallbacks[i]; `refused[i]`: what is
    wrong with an entry that made no shape, said at its place), then the FLEX_START wait."""
    failures = primary_failures(chain)
    for index, shape in enumerate(chain.fallbacks):
        if shape is not None:
            failures += fallback_failures(f"fallbacks[{index}]", shape, chain)
        elif index < len(refused):
            failures += refused[index]
    return failures + wait_failures(chain)


def primary_failures(chain: Chain) -> Failures:
    """The job's own shape: FLEX_START's rules (named scheduling_strategy) and its reservation."""
    primary = chain.primary
    return flex_start_failures("scheduling_strategy", primary, chain) + reservation_failures(
        "reservation_affinity", primary.reservation, primary.region or None, primary.scheduling_strategy
    )


def fallback_failures(where: str, shape: Shape, chain: Chain) -> Failures:
    """One resolved fallback: its reservation (its own, or the job's it inherits: placement.inherits) in its
    region; then its machine's GPU fit and FLEX_START's rules."""
    if bad := reservation_failures(where, shape.reservation, shape.region or None, shape.scheduling_strategy):
        return bad
    return machine_failures(where, shape) + flex_start_failures(where, shape, chain)


def flex_start_failures(where: str, shape: Shape, chain: Chain) -> Failures:
    """Dynamic Workload Scheduler's requirements (FLEX_START_ACCELERATORS' source) for the job on `shape`: its
    GPU, one machine configuration in every pool (the kept CPU pools keep theirs) and the timeout."""
    if shape.scheduling_strategy != "FLEX_START":
        return []
    doc = f"see {placement.DWS_DOC}"
    kinds = {shape.accelerator_type or "no accelerator_type"} if shape.accelerator_count else set()
    failures = []
    if not kinds <= FLEX_START_ACCELERATORS or not kinds:
        what = ", ".join(sorted(kinds - FLEX_START_ACCELERATORS)) or "a CPU-only job"
        failures.append(
            (
                where,
                f"FLEX_START (Dynamic Workload Scheduler) serves "
                f"{', '.join(sorted(FLEX_START_ACCELERATORS))}, not {what}; use SPOT or STANDARD for it "
                f"({doc})",
            )
        )
    machines = {(shape.machine_type, shape.accelerator_type, shape.accelerator_count)}
    machines |= {(machine_type, None, 0) for machine_type in chain.kept_pools}
    if len(machines) > 1:
        failures.append(
            (where, f"FLEX_START needs the same machine configuration in every worker pool ({doc})")
        )
    timeout = chain.timeout_seconds
    if timeout is not None and timeout > FLEX_START_MAX_TIMEOUT_SECONDS:
        failures.append(
            (
                where,
                f"FLEX_START allows a timeout of at most 7 days ({FLEX_START_MAX_TIMEOUT_SECONDS}s; {doc})",
            )
        )
    return failures


def wait_failures(chain: Chain) -> Failures:
    """max_wait_seconds given to a chain none of whose shapes waits (only FLEX_START does)."""
    shapes = [chain.primary, *(shape for shape in chain.fallbacks if shape is not None)]
    if chain.max_wait_seconds is None or any(s.scheduling_strategy == "FLEX_START" for s in shapes):
        return []
    return [
        (
            "max_wait_seconds",
            "max_wait_seconds applies only to scheduling_strategy FLEX_START, which no shape uses",
        )
    ]


def max_wait_failures(value: object) -> Failures:
    """max_wait_seconds: whole seconds >= 0."""
    return seconds_value_failures("max_wait_seconds", value, "wait indefinitely")


def deadline_failures(value: object) -> Failures:
    """capacity_deadline_seconds: whole seconds >= 0."""
    return seconds_value_failures("capacity_deadline_seconds", value, "one pass round the chain")


def regions_failures(home: str | None, fallback_regions: Sequence[str]) -> Failures:
    """fallback_regions: distinct region ids other than the home region (the chain is tried there first)."""
    failures = []
    for index, entry in enumerate(fallback_regions):
        failures.extend(region_failures(f"fallback_regions[{index}]", entry))
    known = [r for r in fallback_regions if isinstance(r, str)]
    if len(set(known)) < len(known) or (home is not None and home in known):
        failures.append(
            (
                "fallback_regions",
                f"fallback_regions {known} names a region twice or the job's own region {home}: "
                "the chain is tried in the job's region first, then once in each listed region",
            )
        )
    return failures
