"""What a stack's online deployment would cost, read from the Deployment resource the program declares: the
node-hour price and the hourly and monthly figures at min and max replicas (infra/vertex/cost/serving.py), or
why there is none; the provider's own check on its inputs, as `pulumi preview` would run it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.plan.program import Declared
from infra.vertex.cost.serving import ServingCost
from infra.vertex.deployment import spec as deployment_spec
from infra.vertex.deployment.resource import RESOURCE_TYPE
from infra.vertex.deployment_provider import DeploymentProvider

# What `make plan` says where no dated Google source holds the price. `pulumi preview` says the same today:
# the Billing Catalog is read for training SKUs only (cost/pricing.py), Google documents no wording of its
# prediction SKUs to match, so preview has no other source for a deployment.
UNPRICED = "no sourced price, here or at preview"
MAX_COST_WORDS = (
    "maxCostUsd does not apply: a deployment has no end, so no running total caps it; the budget and its "
    "kill switch (which undeploys it) are its cap"
)


@dataclass(frozen=True)
class PlannedServing:
    name: str
    props: dict[str, Any]  # the provider's checked inputs
    cost: ServingCost | None
    failures: tuple[tuple[str, str], ...]

    def _figures(self) -> dict[str, Any]:
        cost = self.cost
        if cost is None:
            return {}
        low, high = cost.min_replicas, cost.max_replicas
        return {
            "node_hourly_usd": cost.node_hourly_usd,
            "hourly_usd_at_min": cost.hourly(low),
            "hourly_usd_at_max": cost.hourly(high),
            "monthly_usd_at_most_at_min": cost.monthly_bound(low),
            "monthly_usd_at_most_at_max": cost.monthly_bound(high),
            "unpriced": cost.why or None,
        }

    def as_json(self) -> dict[str, Any]:
        keys = ("region", "machine_type", "accelerator_type", "accelerator_count", "spot", "max_hourly_usd")
        return {
            "name": self.name,
            "kind": "DeployedModel",
            **{k: self.props.get(k) for k in keys},
            "min_replicas": self.props.get("min_replica_count"),
            "max_replicas": self.props.get("max_replica_count"),
            **self._figures(),
            "errors": [{"key": f"{self.name}.{p}", "problem": r} for p, r in self.failures],
        }

    def lines(self) -> list[str]:
        p = self.props
        gpu = (
            f"{p.get('accelerator_type')} x {p['accelerator_count']}"
            if p.get("accelerator_count")
            else "no GPU"
        )
        spot = ", Spot" if p.get("spot") is True else ""
        head = (
            f"  {self.name}: {p.get('machine_type')}, {gpu}{spot}, {p.get('min_replica_count')}-"
            f"{p.get('max_replica_count')} replicas, {p.get('region')}"
        )
        if self.failures:
            return [head, *(f"     refused by check: {prop}: {reason}" for prop, reason in self.failures)]
        cost = self.cost
        if cost is None:
            price = "unknown until the preview knows its shape"
        elif cost.node_hourly_usd is None:
            price = f"{UNPRICED} ({cost.why})"
        else:
            price = cost.text()
        ceiling = p.get("max_hourly_usd")
        held = (
            f"maxHourlyUsd: USD {ceiling:.2f}/h at max replicas" if ceiling is not None else "no maxHourlyUsd"
        )
        return [head, f"     {price}", f"     {held}; {MAX_COST_WORDS}"]


def planned_serving(declared: Declared) -> PlannedServing | None:
    if declared.type != RESOURCE_TYPE or not isinstance(declared.provider(), DeploymentProvider):
        return None
    checked = DeploymentProvider().check({}, declared.props())
    props = dict(checked.inputs)
    failures = tuple((f.property, f.reason) for f in checked.failures)
    return PlannedServing(declared.name, props, deployment_spec.cost(props), failures)


def planned_deployments(resources: list[Declared]) -> list[PlannedServing]:
    return [s for s in map(planned_serving, resources) if s is not None]
