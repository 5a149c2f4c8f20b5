"""The regions a misspelt `region` most likely meant, from the regions the project's dated tables name."""

from __future__ import annotations

import difflib

from infra import gcp_ids

# Enough for `us-central` -> us-central1, `europe-west` -> europe-west1, europe-west4, ...
MOST = 3
CUTOFF = 0.6


def known() -> list[str]:
    """Every region the GPU tables name (the Vertex AI Locations page, read on machines.LOCATIONS_READ)."""
    from infra.vertex.capacity.machines import GPUS

    return sorted({region for gpu in GPUS.values() for region in gpu.regions or ()})


def nearest(value: str) -> list[str]:
    """The known regions closest to a value that is not a region (a zone names its own); [] for a region."""
    if gcp_ids.REGION.match(value):
        return []
    zone = gcp_ids.ZONE.match(value)
    if zone:
        return [zone.group(1)]
    regions = known()
    close = [r for r in regions if r.startswith(value)] if value else []
    return (close or difflib.get_close_matches(value, regions, n=MOST, cutoff=CUTOFF))[:MOST]
