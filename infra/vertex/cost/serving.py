"""What a deployed model costs: node hours at Vertex AI's prediction prices, every hour it is deployed.

"You pay for each model deployed to an endpoint, even if no prediction is made. You must undeploy your model
to stop incurring further charges." (Vertex AI pricing, https://cloud.google.com/vertex-ai/pricing, read
2026-11-29). A node is one replica, at prediction prices (pricing.prediction_hourly), never a training
figure. No Spot prediction price has been read, so a Spot deployment has none.

A month is bounded by its longest, 31 days of 24 hours (744 h): a calendar fact, so "monthly" is labelled
"at most". The deployment has no end: `maxCostUsd` (a run's cap) does not apply; the budget and its kill
switch are its cap. `maxHourlyUsd` is a ceiling on its hourly price at maxReplicas.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.vertex.capacity.placement import Pool
from infra.vertex.cost.pricing import PREDICTION_PRICE_URL, RESERVED_WHY, pool_hourly, prediction_source

MONTH_HOURS_BOUND = 31 * 24
SOURCE = f"Vertex AI prediction prices, {PREDICTION_PRICE_URL}"
CATALOG_SOURCE = "Cloud Billing Catalog, Vertex AI's Online/Batch Prediction SKUs, read live"


@dataclass(frozen=True)
class ServingCost:
    """One deployment's price: per node hour (None: no sourced price, `why`), at min and at max replicas."""

    node_hourly_usd: float | None
    min_replicas: int
    max_replicas: int
    why: str = ""
    source: str = SOURCE  # where node_hourly_usd comes from

    def hourly(self, replicas: int) -> float | None:
        return None if self.node_hourly_usd is None else round(self.node_hourly_usd * replicas, 6)

    def monthly_bound(self, replicas: int) -> float | None:
        hourly = self.hourly(replicas)
        return None if hourly is None else round(hourly * MONTH_HOURS_BOUND, 2)

    def text(self) -> str:
        """One line for plan and preview."""
        if self.node_hourly_usd is None:
            return f"no sourced price ({self.why})"
        at = [
            f"USD {self.hourly(n):.2f}/h, at most USD {self.monthly_bound(n):.2f}/month at {n} replica(s)"
            for n in dict.fromkeys((self.min_replicas, self.max_replicas))
        ]
        node = f"USD {self.node_hourly_usd:.4f} per node hour ({self.source})"
        return f"{node}: {'; '.join(at)}; every hour it is deployed, requests or not"

    def over(self, max_hourly_usd: float | None) -> bool:
        """Its hourly price at max replicas is known and above the ceiling."""
        high = self.hourly(self.max_replicas)
        return max_hourly_usd is not None and high is not None and high > max_hourly_usd


def serving_cost(
    region: str,
    machine_type: str,
    accelerator_type: str | None,
    accelerator_count: int,
    min_replicas: int,
    max_replicas: int,
    spot: bool,
    project: str | None = None,
    reserved: bool = False,
) -> ServingCost:
    if spot:
        return ServingCost(None, min_replicas, max_replicas, f"Spot prediction in {region}: none read")
    if reserved:
        return ServingCost(None, min_replicas, max_replicas, f"a node that {RESERVED_WHY}")
    node = Pool(machine_type, accelerator_type, accelerator_count, 1, prediction=True)
    price = pool_hourly(region, node, "STANDARD", project)
    if price is not None:
        source = CATALOG_SOURCE if prediction_source(region, node, project) else SOURCE
        return ServingCost(price, min_replicas, max_replicas, source=source)
    shape = machine_type + (f" + {accelerator_count} x {accelerator_type}" if accelerator_count else "")
    why = f"{shape} in {region}: no row in {SOURCE}, no Billing Catalog price (read at preview)"
    return ServingCost(None, min_replicas, max_replicas, why)
