"""Compute Engine reservations a training job's machines may draw from (`reservation_affinity`).

Facts (aiplatform_v1 `MachineSpec.reservation_affinity`, "Optional. Immutable."; `ReservationAffinity` docs;
Vertex "Use reservations with training", https://cloud.google.com/vertex-ai/docs/training/use-reservations,
read 2026-11-25): types NO_RESERVATION, ANY_RESERVATION (consume any matching reservation, falling back to
on-demand) and SPECIFIC_RESERVATION, which names one reservation by the key
`compute.googleapis.com/reservation-name` and "the full resource name of the reservation"
(projects/P/zones/Z/reservations/N). The reservation's VM properties must match the job's machines exactly
and it must let Vertex use it (sharing policy ALLOW_ALL). "Flex Start for Dynamic Workload Scheduler and
running training jobs on a persistent resource are both supported except when using Compute Engine
reservations": a reservation with FLEX_START is refused. Compute Engine, "Consume reservations", Limitations
(https://cloud.google.com/compute/docs/instances/reservations-consume, read 2026-11-26): Spot VMs and
preemptible instances cannot consume reservations, so a reservation with SPOT is refused too (such a shape
could never be placed: it would wait its queue limit while the reservation bills). A reservation matches one
exact machine configuration, so a fallback inherits the job's only when it keeps its machines (`inherits`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.cloud import aiplatform_v1

from infra.dynamic.preview_inputs import is_unknown
from infra.gcp_ids import REGION

TYPES = ("NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION")
NAME_KEY = "compute.googleapis.com/reservation-name"
DOC = "https://cloud.google.com/vertex-ai/docs/training/use-reservations"
CONSUME_DOC = "https://cloud.google.com/compute/docs/instances/reservations-consume"
# Strategies whose VMs can draw on a reservation (Spot cannot; FLEX_START is not supported with one).
CONSUMING_STRATEGIES = frozenset({"STANDARD"})
# The full name of a reservation, in a zone (a region in gcp_ids.REGION's form, then `-a`, `-b`, ...).
RESERVATION_NAME = re.compile(
    r"projects/[^/]+/zones/(?P<zone>(?P<region>[a-z]+-[a-z]+[0-9]+)-[a-z])/reservations/[^/]+"
)
KEYS = ("type", "reservation")


@dataclass(frozen=True)
class Reservation:
    """How a shape's machines consume reservations: the type, and the full name for SPECIFIC_RESERVATION."""

    type: str
    reservation: str = ""

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> Reservation | None:
        """From the prop's map; None when absent or not a map with a type (check names that)."""
        if not isinstance(value, Mapping) or "type" not in value:
            return None
        return cls(str(value["type"]), str(value.get("reservation") or ""))

    @property
    def consumed(self) -> bool:
        """The machines may take a reservation (ANY_ or SPECIFIC_RESERVATION)."""
        return self.type != "NO_RESERVATION"

    def as_dict(self) -> dict[str, str]:
        return {"type": self.type, **({"reservation": self.reservation} if self.reservation else {})}

    def proto(self) -> aiplatform_v1.ReservationAffinity:
        """The MachineSpec.reservation_affinity Vertex takes."""
        affinity = aiplatform_v1.ReservationAffinity(
            reservation_affinity_type=aiplatform_v1.ReservationAffinity.Type[self.type]  # type: ignore[misc]
        )
        if self.type == "SPECIFIC_RESERVATION":
            affinity.key = NAME_KEY
            affinity.values = [self.reservation]
        return affinity


def consumes(value: Mapping[str, Any] | None) -> bool:
    """The affinity lets the machines take a reservation (ANY_ or SPECIFIC_RESERVATION): billed then at
    Compute Engine's prices plus a Vertex management fee, not at Vertex's own machine SKUs."""
    found = Reservation.of(value)
    return found is not None and found.consumed


def parse_affinity(where: str, value: Any) -> tuple[Reservation | None, list[tuple[str, str]]]:
    """A reservation_affinity map as a Reservation, or what is wrong with its form (None, no failure: absent
    or not known yet in a preview)."""
    if value is None or is_unknown(value):
        return None, []
    key = _key(where)
    if not isinstance(value, Mapping):
        return None, [(key, f"{key} must be a map {{type, reservation}}, not {value!r}")]
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        return None, [(key, f"{key} has unknown keys {unknown}; it takes type and reservation")]
    kind, name = value.get("type"), value.get("reservation")
    if kind not in TYPES:
        return None, [_type_failure(key, kind)]
    if name is not None and not isinstance(name, str):
        return None, [
            _name_failure(key, name) if kind == "SPECIFIC_RESERVATION" else _only_specific(key, kind)
        ]
    return Reservation(kind, name or ""), []


def reservation_failures(
    where: str, reservation: Reservation | None, region: str | None, strategy: str
) -> list[tuple[str, str]]:
    """A shape's reservation that Vertex would refuse: its type, its name (the full name, in the shape's
    `region`: None for no verdict), and the strategies that cannot consume one (FLEX_START, SPOT)."""
    if reservation is None:
        return []
    key, kind, name = _key(where), reservation.type, reservation.reservation
    if kind not in TYPES:
        return [_type_failure(key, kind)]
    failures = []
    if kind == "SPECIFIC_RESERVATION":
        match = RESERVATION_NAME.fullmatch(name)
        if match is None:
            failures.append(_name_failure(key, name or None))
        elif region is not None and match["region"] != region:
            failures.append(
                (
                    key,
                    f"{key}.reservation is in zone {match['zone']}, not in the shape's region {region}: a "
                    "job uses reservations of its own region only; name one there or give this shape that "
                    "region",
                )
            )
    elif name:
        failures.append(_only_specific(key, kind))
    if strategy == "FLEX_START" and kind != "NO_RESERVATION":
        failures.append(
            (
                key,
                f"{key} {kind} cannot go with scheduling_strategy FLEX_START: Google supports Flex Start "
                f"'except when using Compute Engine reservations' ({DOC}); use STANDARD with the reservation "
                "or drop it for this shape",
            )
        )
    if strategy == "SPOT" and kind != "NO_RESERVATION":
        failures.append(
            (
                key,
                f"{key} {kind} cannot go with Spot VMs (spot: true / scheduling_strategy SPOT): Spot VMs and "
                "preemptible instances cannot consume reservations (Compute Engine, Consume reservations, "
                f"Limitations: {CONSUME_DOC}); use STANDARD with the reservation, or give this shape "
                "reservation_affinity {type: NO_RESERVATION}",
            )
        )
    return failures


def _key(where: str) -> str:
    return f"{where}.reservation_affinity" if where != "reservation_affinity" else where


def _type_failure(key: str, kind: object) -> tuple[str, str]:
    return (key, f"{key}.type must be one of {', '.join(TYPES)}, not {kind!r} (see {DOC})")


def _name_failure(key: str, name: object) -> tuple[str, str]:
    return (
        key,
        f"{key}.reservation must be the reservation's full name "
        f"projects/PROJECT/zones/ZONE/reservations/NAME for SPECIFIC_RESERVATION, not {name!r}",
    )


def _only_specific(key: str, kind: str) -> tuple[str, str]:
    return (key, f"{key}.reservation is only for SPECIFIC_RESERVATION (type is {kind})")


def region_failures(key: str, value: Any) -> list[tuple[str, str]]:
    """A region id that is not one (e.g. `us-central`, `US-CENTRAL1`, `us-central1-a`, a zone)."""
    if is_unknown(value):
        return []
    if not isinstance(value, str) or not REGION.match(value):
        return [(key, f"{key} must be a region id such as us-central1 or europe-west4, not {value!r}")]
    return []
