"""List prices of Vertex AI custom training (USD per hour) and the estimated cost of a run.

Source: https://cloud.google.com/vertex-ai/pricing#custom-trained_models ("Custom-trained models",
training machine types and accelerators; Spot rows), written down on PRICES_AS_OF without re-reading the
page (the build machine cannot reach it): check them against the page before relying on a figure.
Vertex's on-demand training price for these types is Compute Engine's list price x 1.15 (n1-standard-8
0.379998 -> 0.436998; T4 0.35 -> 0.4025).
Spot prices change up to once a month (https://cloud.google.com/compute/docs/instances/spot#pricing); treat
the Spot figures as a snapshot. Only what is listed gives a figure: an unlisted machine, accelerator or region
gives None, never a guess. Disk, network and storage are not included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PRICES_AS_OF = "2026-11-22"
SOURCE_URL = "https://cloud.google.com/vertex-ai/pricing#custom-trained_models"

# (on-demand, Spot) per hour in us-central1; None where no Spot price is listed.
_US_CENTRAL1: dict[str, tuple[float, float | None]] = {
    "n1-standard-4": (0.218499, 0.043700),
    "n1-standard-8": (0.436998, 0.087400),
    "n1-standard-16": (0.873996, 0.174799),
    "n1-standard-32": (1.747992, 0.349598),
    "n1-highmem-8": (0.544194, 0.108839),
    "n1-highmem-16": (1.088389, 0.217678),
    "e2-standard-4": (0.154114, 0.046234),
    "e2-standard-8": (0.308228, 0.092468),
    "NVIDIA_TESLA_T4": (0.4025, 0.1610),
    "NVIDIA_TESLA_P4": (0.6900, 0.2760),
    "NVIDIA_TESLA_P100": (1.6790, 0.6716),
    "NVIDIA_TESLA_V100": (2.8520, 1.1408),
}
# Regions with the same list prices as us-central1 (Compute Engine's first price tier).
_SAME_AS_US_CENTRAL1 = ("us-central1", "us-east1", "us-west1")
# europe-west4: machines 10% above us-central1, these GPUs at the same price; no Spot prices recorded.
_EUROPE_WEST4: dict[str, tuple[float, float | None]] = {
    name: ((on_demand * 1.1, None) if not name.startswith("NVIDIA_") else (on_demand, None))
    for name, (on_demand, _spot) in _US_CENTRAL1.items()
}
PRICES: dict[str, dict[str, tuple[float, float | None]]] = {
    **dict.fromkeys(_SAME_AS_US_CENTRAL1, _US_CENTRAL1),
    "europe-west4": _EUROPE_WEST4,
}


def hourly_price(region: str, item: str, spot: bool) -> float | None:
    """Price per hour of one machine or one accelerator in `region`; None when not listed."""
    prices = PRICES.get(region, {}).get(item)
    if prices is None:
        return None
    return prices[1] if spot else prices[0]


def pool_hourly(region: str, pool: Mapping[str, Any], spot: bool) -> float | None:
    """Replicas x (machine + accelerators) per hour for one worker pool; None when any part is unlisted."""
    machine = hourly_price(region, pool["machine_type"], spot)
    if machine is None:
        return None
    per_replica = machine
    count = int(pool.get("accelerator_count") or 0)
    if count:
        accelerator = hourly_price(region, pool.get("accelerator_type", ""), spot)
        if accelerator is None:
            return None
        per_replica += count * accelerator
    return int(pool.get("replica_count", 1)) * per_replica


def estimate_usd(region: str, pools: Sequence[Mapping[str, Any]], spot: bool, seconds: float) -> float | None:
    """List-price cost of running these pools for `seconds`, None when a price is unknown."""
    hourly = [pool_hourly(region, pool, spot) for pool in pools]
    if any(h is None for h in hourly):
        return None
    return round(sum(h for h in hourly if h is not None) * seconds / 3600.0, 4)
