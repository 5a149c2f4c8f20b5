"""Hourly list prices of Vertex AI custom training, from a source or not at all, and what a run costs.

Where a price comes from, in order:
1. The Cloud Billing Catalog API (`CloudCatalogClient.list_skus`, read once per provider process) for Vertex
   AI's service, `services/C7E2-9256-1C43` (the id `ListServices` gives "Vertex AI"; the one public catalog
   readers use, seen 2026-11-22). A SKU is taken for a part of a training machine only when its fields, as
   google/cloud/billing/v1/cloud_catalog.proto documents them (google-cloud-billing 1.21.0, read 2026-11-22),
   say so: `service_regions` holds the job's region, `category.usage_type` is "OnDemand" (STANDARD) or
   "Preemptible" (SPOT), `pricing_expression.usage_unit` is "h" (cores, GPUs) or "GiBy.h" (memory), and the
   description names training and the family or GPU model (the part: `_is_part`; SKUs that never count:
   _NOT_LIST_PARTS, _NOT_ON_DEMAND; of tiered rates the dearest: `_unit_usd`). Google documents no exact
   wording for Vertex's training SKUs, so a part that matches no SKU, or SKUs of different prices, has no
   catalog price. A machine's price is its cores x the core price + its GiB x the memory price
   (MACHINE_SHAPES, Compute Engine's machine tables): a sum of published prices, no ratio.
2. TABLE: figures from Vertex AI's price list, each with its page and the date it was read. Spot prices
   change up to monthly and none was read, so the table has no Spot figure.
Prediction machines (`Pool.prediction`: a batch job's, a deployed model's node) are billed at Vertex's
prediction prices, never at a training price: the catalog's prediction SKUs, by the same rule as training's
with the description naming online/batch prediction (PREDICTION_SKU_NAME, its sources below), else
PREDICTION_TABLE (empty: no dated page holds the figures); else no price. Anything else (another region,
FLEX_START, a3 machines, ...) has no price, never a guess. Disk, network and storage are not included.

What the dollar cap counts (`shape_rate`): a shape's own price where one has a source; for a Spot or
FLEX_START shape without one, the same shape's on-demand price in its region, marked as an upper bound. Google
states that Spot prices are "discounts of up to 91% off of the corresponding default price" (Compute Engine
"Spot VMs pricing", SPOT_PRICING_URL, read 2026-11-25) and that flex-start VMs "offer significant discounts
compared to standard on-demand pricing" (FLEX_START_PRICING_URL, read 2026-11-25): the on-demand price is a
sourced ceiling, never scaled by a ratio. A catalog Spot price, when there is one, replaces the bound.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions
from google.cloud import billing_v1
from google.cloud.billing_v1.services.cloud_catalog.transports import CloudCatalogGrpcTransport

from infra.dynamic.endpoints import client_kwargs
from infra.vertex.capacity.machines import FAMILY_PRICE_WORDS, GPU_PRICE_WORDS, MACHINE_SHAPES
from infra.vertex.capacity.placement import Pool

VERTEX_SERVICE = "services/C7E2-9256-1C43"
ENDPOINT = "cloudbilling.googleapis.com"
CALL_TIMEOUT_SECONDS = 30.0
USAGE_TYPES = {"STANDARD": "OnDemand", "SPOT": "Preemptible"}
PRICE_LIST_URL = "https://cloud.google.com/vertex-ai/pricing#custom-trained_models"
PRICE_LIST_READ = "2026-11-22"
# Vertex AI price list, custom training, us-central1, on-demand (USD per hour). Checked against the page by
# the cost review of 2026-11-22 (issue 17): the on-demand figures match; no Spot figure was read.
# Issue 43 (2026-11-27) set out to extend this block to every machine family and GPU of
# capacity/machines.py in every region the page lists, and could not: every stored copy of PRICE_LIST_URL the
# search tool holds (the English page and its hl= variants, `pages` and `docs` corpora, eleven queries) gives
# only the page's opening (AutoML and the legacy comparison), never the custom-training tables. So g2 /
# NVIDIA_L4, a2 / A100, a3 / H100 / H200, a4 / B200, g4, e2 beyond the rows below, and every region but
# us-central1 have no figure here (no ratio, no third-party copy stands in for the page): offline they read
# "no sourced price", and at `preview` / `up` the Billing Catalog (above) prices them where it answers. Under
# a dollar cap such a shape is skipped rather than run uncounted (cost/limits.py).
TABLE: dict[tuple[str, str], dict[str, float]] = {
    ("us-central1", "STANDARD"): {
        "n1-standard-4": 0.218499,
        "n1-standard-8": 0.436998,
        "n1-standard-16": 0.873996,
        "n1-standard-32": 1.747992,
        "n1-highmem-8": 0.544194,
        "n1-highmem-16": 1.088389,
        "e2-standard-4": 0.154114,
        "e2-standard-8": 0.308228,
        "NVIDIA_TESLA_T4": 0.4025,
        "NVIDIA_TESLA_P4": 0.6900,
        "NVIDIA_TESLA_P100": 1.6790,
        "NVIDIA_TESLA_V100": 2.8520,
    },
}
# --- Prediction (issues 41, 51): Vertex AI's prediction prices, apart from training's TABLE. ---
# The Vertex AI pricing page lists prediction node-hour prices per machine type and region
# (PREDICTION_PRICE_URL). The stored copies of that page this project could read (2026-11-27, 2026-11-29) end
# before its prediction section, so no row has a source: the table is empty, and offline (`make plan`) every
# prediction machine reads "no sourced price" (never a training figure, never a ratio); at preview and `up`
# the Billing Catalog's prediction SKUs price it where they answer (prediction_hourly). A row, once read from
# the page: {region: {machine type or accelerator: USD per node hour}}, with the date read.
PREDICTION_PRICE_URL = "https://cloud.google.com/vertex-ai/pricing#prediction-prices"
PREDICTION_TABLE: dict[str, dict[str, float]] = {}


def prediction_hourly(region: str, item: str, project: str | None = None) -> float | None:
    """Node-hour price of a prediction machine type or accelerator in `region`, on demand (hourly_price)."""
    return hourly_price(region, item, "STANDARD", project, PREDICTION)


SPOT_PRICING_URL = "https://cloud.google.com/compute/docs/instances/spot#pricing"
FLEX_START_PRICING_URL = "https://cloud.google.com/compute/docs/instances/flex-start-vms#pricing"
BOUND_READ = "2026-11-25"
# Strategies billed below the on-demand price of the same shape (the sources above).
BELOW_ON_DEMAND = {"SPOT": SPOT_PRICING_URL, "FLEX_START": FLEX_START_PRICING_URL}
_TRAINING = re.compile(r"\btraining\b", re.IGNORECASE)
# Vertex AI's prediction SKUs, as billing records name them (read 2026-11-29; docs/batch-prediction.md,
# Sources): "Vertex AI: Online/Batch Prediction A3 Predefined Instance Core running in Iowa" (A002-4323-D900),
# "... A3 Predefined Instance Ram running in Iowa" (2424-9F04-82A8), "... Nvidia H100 80gb GPU running in
# Iowa" (AE9C-DB60-DF46): the whole bill of an on-demand a3-highgpu-1g endpoint in a Google Cloud Japan
# billing report; "... A2 Instance Core running in Americas" (F86F-168E-2FB6), "... Nvidia A100 80gb GPU
# running in Iowa" (72B6-EE31-7A41); "... N1 Predefined Instance Core running in" (a price check run against
# the live catalog). One set for online and batch prediction ("Online/Batch").
PREDICTION_SKU_NAME = re.compile(r"^Vertex AI: Online/Batch Prediction\b", re.IGNORECASE)
# Never what an on-demand prediction node pays: the management fee Vertex adds where a node consumes a
# Compute Engine reservation ("Use reservations with batch inference", Billing) or runs flex-start (the same
# report), and any commitment, Spot or DWS SKU.
_NOT_PREDICTION_PARTS = re.compile(
    r"management fee|commit|reserv|\bdws\b|flex|dynamic workload", re.IGNORECASE
)
TRAINING, PREDICTION = "training", "prediction"
# A prediction machine that may consume a reservation is billed otherwise ("Use reservations with batch
# inference", Billing: Compute Engine's prices for the resources plus Vertex's management fee): no figure.
RESERVED_WHY = (
    "may consume a reservation, billed at Compute Engine's prices plus a Vertex management fee: none read"
)
# Never a list price of a training part: commitments, reservations, prediction, and Dynamic Workload Scheduler
# (FLEX_START) SKUs, which may carry usage_type "OnDemand" but are not what a STANDARD job pays.
_NOT_LIST_PARTS = re.compile(
    r"commit|reserv|sole tenan|predict|serving|custom instance|\bdws\b|flex|dynamic workload", re.IGNORECASE
)
# An "OnDemand" SKU whose description says Spot or preemptible is not an on-demand price.
_NOT_ON_DEMAND = re.compile(r"\bspot\b|preemptible", re.IGNORECASE)
# category.resource_group values that name the part itself; other groups (e.g. "N1Standard") do not.
PART_GROUPS = {"core": "CPU", "ram": "RAM", "gpu": "GPU"}


@dataclass(frozen=True)
class CatalogSku:
    sku_id: str
    description: str
    regions: tuple[str, ...]
    usage_type: str
    unit: str
    usd: float
    resource_group: str = ""
    use: str = TRAINING  # what the SKU bills: TRAINING or PREDICTION


def strategy_name(strategy: str | bool | None) -> str:
    """STANDARD / SPOT / FLEX_START from a strategy name or the old `spot` flag."""
    if isinstance(strategy, bool) or strategy is None:
        return "SPOT" if strategy else "STANDARD"
    return strategy


def _unit_usd(sku: billing_v1.Sku) -> tuple[str, float] | None:
    """(usage unit, USD per unit) of the SKU's current price: its dearest tier. That skips a free first tier
    and, for volume tiers (cheaper past a usage amount), takes the cautious rate: a cap must not fire late."""
    if not sku.pricing_info:
        return None
    expression = sku.pricing_info[-1].pricing_expression
    prices = [rate.unit_price for rate in expression.tiered_rates]
    if not prices or any(price.currency_code not in ("", "USD") for price in prices):
        return None
    usd = max(price.units + price.nanos / 1e9 for price in prices)
    return (expression.usage_unit, usd) if usd > 0 else None


def sku_use(description: str) -> str | None:
    """TRAINING or PREDICTION for a list-price SKU of a training or a prediction machine part, else None."""
    if PREDICTION_SKU_NAME.search(description):
        return None if _NOT_PREDICTION_PARTS.search(description) else PREDICTION
    if _TRAINING.search(description) and not _NOT_LIST_PARTS.search(description):
        return TRAINING
    return None


def catalog_skus(skus: Sequence[billing_v1.Sku]) -> list[CatalogSku]:
    """The on-demand/Spot training and prediction SKUs among a service's SKUs."""
    found = []
    for sku in skus:
        priced = _unit_usd(sku)
        use = sku_use(sku.description)
        if priced is None or use is None:
            continue
        if sku.category.usage_type == "OnDemand" and _NOT_ON_DEMAND.search(sku.description):
            continue
        found.append(
            CatalogSku(
                sku.sku_id,
                sku.description,
                tuple(sku.service_regions),
                sku.category.usage_type,
                priced[0],
                priced[1],
                sku.category.resource_group,
                use,
            )
        )
    return found


def _is_part(sku: CatalogSku, words: str, part: str) -> bool:
    """The SKU prices `part` (core, ram, gpu) of what `words` name: by category.resource_group (PART_GROUPS),
    else by Compute Engine's words ("N1 Predefined Instance Core", "Nvidia Tesla T4 GPU")."""
    if sku.resource_group in PART_GROUPS.values():
        named = re.search(rf"\b{words}\b", sku.description, re.IGNORECASE)
        return bool(named) and sku.resource_group == PART_GROUPS[part]
    return bool(re.search(rf"\b{words}(?: instance)? {part}\b", sku.description, re.IGNORECASE))


def _part_price(
    skus: Sequence[CatalogSku], region: str, usage: str, words: str, part: str, unit: str
) -> float | None:
    prices = {
        sku.usd
        for sku in skus
        if region in sku.regions
        and sku.usage_type == usage
        and sku.unit == unit
        and _is_part(sku, words, part)
    }
    return prices.pop() if len(prices) == 1 else None


def catalog_price(
    skus: Sequence[CatalogSku], region: str, item: str, strategy: str, use: str = TRAINING
) -> float | None:
    """Price per hour of a machine or a GPU from the SKUs of `use` (training or prediction); None unless each
    part has one price."""
    usage = USAGE_TYPES.get(strategy)
    if usage is None:
        return None
    skus = [sku for sku in skus if sku.use == use]
    if item in GPU_PRICE_WORDS:
        return _part_price(skus, region, usage, GPU_PRICE_WORDS[item], "gpu", "h")
    shape = MACHINE_SHAPES.get(item)
    family = FAMILY_PRICE_WORDS.get(item.split("-", 1)[0])
    if shape is None or family is None:
        return None
    core = _part_price(skus, region, usage, family, "core", "h")
    ram = _part_price(skus, region, usage, family, "ram", "GiBy.h")
    if core is None or ram is None:
        return None
    return shape[0] * core + shape[1] * ram


class Catalog:
    """Vertex AI's training and prediction SKUs, listed once per process (one project's credentials pay for
    the call)."""

    _lock = threading.Lock()
    _skus: list[CatalogSku] | None = None
    _failed: str | None = None

    @classmethod
    def skus(cls, project: str | None) -> list[CatalogSku] | None:
        """The training and prediction SKUs, or None when the catalog cannot be read (said once)."""
        with cls._lock:
            if cls._skus is None and cls._failed is None:
                try:
                    cls._skus = catalog_skus(list_vertex_skus(project))
                except (gexc.GoogleAPICallError, auth_exceptions.GoogleAuthError) as exc:
                    cls._failed = f"{type(exc).__name__}: {exc}"
                    print(
                        f"[pricing] Cloud Billing Catalog unreadable ({cls._failed}); using the cited table",
                        file=sys.stderr,
                        flush=True,
                    )
            return cls._skus

    @classmethod
    def offline(cls) -> None:
        """Never read the catalog in this process: prices come from the cited table (a plan made offline)."""
        with cls._lock:
            cls._skus, cls._failed = None, "not read: offline"

    @classmethod
    def forget(cls) -> None:
        """Read the catalog again on next use (a test's fresh catalog)."""
        with cls._lock:
            cls._skus, cls._failed = None, None


def list_vertex_skus(project: str | None) -> list[billing_v1.Sku]:
    """Every SKU of Vertex AI in USD, all pages (the emulator in VERTEX_AI_EMULATOR_HOST when set)."""
    client = billing_v1.CloudCatalogClient(
        **client_kwargs(CloudCatalogGrpcTransport, ENDPOINT, quota_project=project)
    )
    request = billing_v1.ListSkusRequest(parent=VERTEX_SERVICE, currency_code="USD", page_size=5000)
    return list(client.list_skus(request=request, timeout=CALL_TIMEOUT_SECONDS))


def hourly_price(
    region: str, item: str, strategy: str | bool = "STANDARD", project: str | None = None, use: str = TRAINING
) -> float | None:
    """Price per hour of one machine or accelerator of `use`: the catalog's, else the cited table's (TABLE,
    PREDICTION_TABLE), else None."""
    strategy = strategy_name(strategy)
    skus = Catalog.skus(project)
    price = None if skus is None else catalog_price(skus, region, item, strategy, use)
    if price is not None:
        return price
    table = TABLE.get((region, strategy), {}) if use == TRAINING else PREDICTION_TABLE.get(region, {})
    return table.get(item)


def prediction_source(region: str, pool: Pool, project: str | None = None) -> bool:
    """The catalog prices every item of this prediction pool (the catalog's figure, not the table's)."""
    skus = Catalog.skus(project)
    return skus is not None and all(
        catalog_price(skus, region, item, "STANDARD", PREDICTION) is not None for item in pool_items(pool)
    )


def pool_items(pool: Pool) -> list[str]:
    """What one replica of a pool is billed for: its machine type and, if any, its accelerator type."""
    items = [pool.machine_type]
    if pool.accelerator_count:
        items.append(pool.accelerator_type or "")
    return items


def pool_hourly(
    region: str, pool: Pool, strategy: str | bool = "STANDARD", project: str | None = None
) -> float | None:
    """Replicas x (machine + accelerators) per hour for one worker pool; None when any part has no price
    (a prediction pool: at prediction prices only)."""
    if pool.prediction and (pool.reserved or strategy_name(strategy) != "STANDARD"):
        return None  # reserved: Compute Engine's prices plus a management fee (RESERVED_WHY); no Spot figure
    use = PREDICTION if pool.prediction else TRAINING
    machine = hourly_price(region, pool.machine_type, strategy, project, use)
    gpu = pool.accelerator_type or ""
    accelerator = hourly_price(region, gpu, strategy, project, use) if pool.accelerator_count else 0.0
    if machine is None or accelerator is None:
        return None
    return pool.replica_count * (machine + pool.accelerator_count * accelerator)


def shape_hourly(
    region: str,
    pools: Sequence[Pool],
    strategy: str | bool = "STANDARD",
    project: str | None = None,
) -> float | None:
    """Price per hour of all pools together; None when a part has no price."""
    hourly = [pool_hourly(region, pool, strategy, project) for pool in pools]
    if any(h is None for h in hourly):
        return None
    return sum(h for h in hourly if h is not None)


def estimate_usd(
    region: str,
    pools: Sequence[Pool],
    strategy: str | bool,
    seconds: float,
    project: str | None = None,
) -> float | None:
    """List-price cost of running these pools for `seconds`, None when a price is unknown."""
    hourly = shape_hourly(region, pools, strategy, project)
    return None if hourly is None else round(hourly * seconds / 3600.0, 4)


def missing(
    region: str, pools: Sequence[Pool], strategy: str | bool, project: str | None = None
) -> list[str]:
    """The items of these pools that have no price, e.g. `NVIDIA_L4 (us-central1, SPOT)`."""
    strategy = strategy_name(strategy)
    reserved = dict.fromkeys(item for pool in pools if pool.reserved for item in pool_items(pool))
    predicting = dict.fromkeys(
        item for pool in pools if pool.prediction and not pool.reserved for item in pool_items(pool)
    )
    unsourced = [f"{item} ({region}, batch prediction: {RESERVED_WHY})" for item in reserved] + [
        f"{item} ({region}, batch prediction: no sourced price)"
        for item in predicting
        if prediction_hourly(region, item, project) is None
    ]
    items = dict.fromkeys(item for pool in pools if not pool.prediction for item in pool_items(pool))
    return unsourced + [
        f"{item} ({region}, {strategy})"
        for item in items
        if hourly_price(region, item, strategy, project) is None
    ]


@dataclass(frozen=True)
class Rate:
    """What one hour of a shape counts: its own price, or (`bound`) the on-demand price standing as the upper
    bound of a Spot or FLEX_START shape that has no price of its own."""

    usd: float
    bound: bool = False
    strategy: str = "STANDARD"

    def text(self) -> str:
        """`USD 0.84/h`, or `at most USD 0.84/h (on-demand price; Spot is billed below it)`."""
        if not self.bound:
            return f"USD {self.usd:.2f}/h"
        return f"at most USD {self.usd:.2f}/h ({bound_words(self.strategy)})"


def bound_words(strategy: str) -> str:
    """Why the on-demand figure bounds a Spot or FLEX_START shape, with the page that says so."""
    kind = "Spot" if strategy == "SPOT" else "FLEX_START"
    return f"on-demand price; {kind} is billed below it, {BELOW_ON_DEMAND[strategy]}, read {BOUND_READ}"


def cost_words(cost: float, bound: bool | None, strategy: str) -> str:
    """An estimate as a closing line says it: at most an on-demand bound, or at the shape's list prices."""
    if bound:
        words = bound_words(strategy) if strategy in BELOW_ON_DEMAND else "on-demand prices"
        return f"estimated cost at most USD {cost:.2f} ({words})"
    return f"estimated cost USD {cost:.2f} ({strategy} list prices)"


def shape_rate(
    region: str,
    pools: Sequence[Pool],
    strategy: str | bool = "STANDARD",
    project: str | None = None,
) -> Rate | None:
    """The hourly figure the dollar cap counts for these pools: their own price, else for Spot/FLEX_START the
    on-demand price as a bound, else None."""
    strategy = strategy_name(strategy)
    own = shape_hourly(region, pools, strategy, project)
    if own is not None:
        return Rate(own, False, strategy)
    if strategy in BELOW_ON_DEMAND:
        on_demand = shape_hourly(region, pools, "STANDARD", project)
        if on_demand is not None:
            return Rate(on_demand, True, strategy)
    return None
