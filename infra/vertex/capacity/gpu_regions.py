"""Where a shape's GPU is offered for training: a preview WARNING, never a check error, as machines.GPUS
`regions` is a dated snapshot (LOCATIONS_READ) and Google adds GPU regions; Vertex judges at submission."""
# Vertex AI "Locations" (LOCATIONS_URL) also says: "If your job uses multiple types of GPUs, they must all be
# available in a single zone."

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.capacity import placement
from infra.vertex.capacity.machines import GPUS, LOCATIONS_URL, offered
from infra.vertex.capacity.machines import LOCATIONS_READ as READ


def known_chain(props: Mapping[str, Any]) -> list[placement.Shape]:
    """The chain of a job on Vertex, once the props that make it are known (a preview may not know them);
    [] before, or for a job without worker pools."""
    # Only what makes the shapes: a preview often leaves a pool's image or args unknown, never its machine.
    keys = ("region", "fallbacks", "fallback_regions", "scheduling_strategy", "reservation_affinity", "spot")
    if props.get("runner") != "vertex" or any(is_unknown(props.get(key)) for key in keys):
        return []
    pools = props.get("worker_pools")
    if not isinstance(pools, list) or not pools or not isinstance(pools[0], Mapping):
        return []
    if any(is_unknown(pools[0].get(k)) for k in placement.MACHINE_KEYS):
        return []
    return placement.shapes(props)


def _pairs(chain: Sequence[placement.Shape], verdicts: tuple[bool | None, ...]) -> list[tuple[str, str]]:
    """Each (GPU, region) of the chain's GPU shapes, once, whose table verdict is one of `verdicts`."""
    return list(
        dict.fromkeys(
            (shape.accelerator_type, shape.region)
            for shape in chain
            if shape.accelerator_type
            and shape.region
            and offered(shape.accelerator_type, shape.region) in verdicts
        )
    )


def warning_lines(chain: Sequence[placement.Shape]) -> list[str]:
    """One WARNING per (GPU, region) of the chain that the dated table does not list or cannot judge."""
    return [_warning(kind, region) for kind, region in _pairs(chain, (False, None))]


def unlisted_lines(chain: Sequence[placement.Shape]) -> list[str]:
    """Only the (GPU, region) pairs the table's complete list leaves out (preflight's note), unprefixed."""
    return [_warning(kind, region).removeprefix("WARNING: ") for kind, region in _pairs(chain, (False,))]


def _warning(kind: str, region: str) -> str:
    if offered(kind, region) is False:
        said = (
            f"Vertex AI's Locations table read {READ} ({LOCATIONS_URL}) does not list {kind} for training "
            f"in {region} (it lists {', '.join(sorted(GPUS[kind].regions or ()))})"
        )
    else:
        said = (
            f"whether Vertex AI offers {kind} for training in {region} is not in the Locations table read "
            f"{READ} ({LOCATIONS_URL})"
        )
    return (
        f"WARNING: {said}. Preview only: Google adds GPU regions over time, so Vertex decides at submission; "
        "if it refuses the GPU there, the job moves to its next shape with Vertex's answer as the reason"
    )
