"""Check's verdict on where a shape's GPU is offered for training, from machines.GPUS `regions` (Vertex AI
"Locations", read 2026-11-25). A GPU whose list was read whole gives a verdict for every region (listed:
offered; not listed: not offered, a check error); a GPU read only in part (H100), or not read at all (T4, P4,
P100, A100 80GB, H200, ...), gives no verdict for a region it does not list: a warning says so instead of a
wrong answer. The same page: "If your job uses multiple types of GPUs, they must all be
available in a single zone."
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.capacity import placement
from infra.vertex.capacity.machines import GPUS, LOCATIONS_URL, offered
from infra.vertex.capacity.machines import LOCATIONS_READ as READ


def where_offered(accelerator: str) -> str:
    return ", ".join(sorted(GPUS[accelerator].regions or ()))


def _gpu_shapes(props: Mapping[str, Any]) -> list[tuple[int, placement.Shape]]:
    """The chain's GPU shapes with their index, once the chain is known (a preview may not know it)."""
    # Only what makes the shapes: a preview often leaves a pool's image or args unknown, never its machine.
    keys = ("region", "fallbacks", "fallback_regions", "scheduling_strategy", "reservation_affinity", "spot")
    if props.get("runner") != "vertex" or any(is_unknown(props.get(key)) for key in keys):
        return []
    pools = props.get("worker_pools")
    if not isinstance(pools, list) or not pools or not isinstance(pools[0], Mapping):
        return []
    if any(is_unknown(pools[0].get(k)) for k in ("machine_type", "accelerator_type", "accelerator_count")):
        return []
    return [(i, s) for i, s in enumerate(placement.shapes(props)) if s.accelerator_type and s.region]


def _name(index: int) -> str:
    return "shape" if index == 0 else f"chain shape {index}"


def failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Check errors: a shape whose GPU the page's complete list does not offer for training in its region."""
    found = []
    for index, shape in _gpu_shapes(props):
        kind = shape.accelerator_type or ""
        if offered(kind, shape.region) is False:
            found.append(
                (
                    "fallbacks" if index else "worker_pools",
                    f"{_name(index)} {shape.where()}: Vertex AI does not offer {kind} for training in "
                    f"{shape.region}; it does in {where_offered(kind)} (Vertex AI Locations, "
                    f"{LOCATIONS_URL}, read {READ}); pick another region or GPU for this shape",
                )
            )
    return found


def not_moved_lines(props: Mapping[str, Any]) -> list[str]:
    """One line per fallback region a shape is not tried in because its GPU is not offered there."""
    if not _gpu_shapes(props):
        return []
    home = placement.home_chain(props)
    found = []
    for region in props.get("fallback_regions") or []:
        for shape in home:
            kind = shape.accelerator_type or ""
            if kind and offered(kind, region) is False:
                found.append(
                    f"not tried in {region}: {shape}, as Vertex AI does not offer {kind} for training there "
                    f"({LOCATIONS_URL}, read {READ})"
                )
    return found


def warning_lines(props: Mapping[str, Any]) -> list[str]:
    """One WARNING per (GPU, region) of the chain that the sourced table cannot judge."""
    pairs = dict.fromkeys(
        (shape.accelerator_type or "", shape.region)
        for _, shape in _gpu_shapes(props)
        if offered(shape.accelerator_type or "", shape.region) is None
    )
    return [
        f"WARNING: whether Vertex AI offers {kind} for training in {region} is not in the table read from "
        f"{LOCATIONS_URL} ({READ}; capacity/gpu_regions.py): check that page before relying on it"
        for kind, region in pairs
    ]
