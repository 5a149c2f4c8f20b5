"""Storage prices read live from the Cloud Billing Catalog for a bucket's or a repository's location (a
region, a dual-region or a multi-region), with prices.py's dated table as the offline fallback.

The services are found by name (`ListServices`: "Cloud Storage", "Artifact Registry"), their SKUs listed once
per process (`ListSkus`, USD). A SKU prices a location's storage only when its fields, as
google/cloud/billing/v1/cloud_catalog.proto documents them (google-cloud-billing 1.21.0), say so: usage_type
"OnDemand", `pricing_expression.usage_unit` "GiBy.mo", `service_regions` holding the location, and (Google
documents no wording of these descriptions) a description naming the storage: "Standard Storage" for a
Standard bucket, worded for its location type (regional SKUs name neither "dual-region" nor "multi-region"),
never an operation, retrieval, early-delete, transfer or replication SKU; for a repository, Artifact
Registry's storage SKU. Of tiered rates the dearest counts (past a free tier: Artifact Registry's first 0.5 GB
of a billing account are free, so its figure stays a bound). No SKU, or SKUs of different prices: no catalog
price, and the table answers where it has the location.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Sequence

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions
from google.cloud import billing_v1
from google.cloud.billing_v1.services.cloud_catalog.transports import CloudCatalogGrpcTransport

from infra.dynamic.endpoints import client_kwargs
from infra.vertex.cost.pricing import CALL_TIMEOUT_SECONDS, ENDPOINT

STORAGE_SERVICE = "Cloud Storage"
REGISTRY_SERVICE = "Artifact Registry"
UNIT = "GiBy.mo"
CATALOG_SOURCE = "Cloud Billing Catalog (read live)"
_NOT_STORAGE = re.compile(
    r"operation|class [ab]|retrieval|early delet|egress|transfer|replication|autoclass|network|"
    r"inter-region|management|data processing|vulnerability|scanning",
    re.IGNORECASE,
)
_STANDARD = re.compile(r"\bstandard storage\b", re.IGNORECASE)
_LOCATION_TYPE_WORDS = {"dual-region": "dual-region", "multi-region": "multi-region"}


def _usd_per_unit(sku: billing_v1.Sku) -> float | None:
    """USD per GiB-month of the SKU's current price: its dearest tier (past a free one), in USD only."""
    if not sku.pricing_info:
        return None
    expression = sku.pricing_info[-1].pricing_expression
    prices = [rate.unit_price for rate in expression.tiered_rates]
    if expression.usage_unit != UNIT or not prices:
        return None
    if any(price.currency_code not in ("", "USD") for price in prices):
        return None
    usd = max(price.units + price.nanos / 1e9 for price in prices)
    return usd if usd > 0 else None


def _one_price(skus: Sequence[billing_v1.Sku]) -> float | None:
    prices = {usd for usd in map(_usd_per_unit, skus) if usd is not None}
    return prices.pop() if len(prices) == 1 else None


def _storage_skus(skus: Sequence[billing_v1.Sku], location: str) -> list[billing_v1.Sku]:
    where = location.lower()
    return [
        sku
        for sku in skus
        if sku.category.usage_type == "OnDemand"
        and where in (region.lower() for region in sku.service_regions)
        and not _NOT_STORAGE.search(sku.description)
    ]


def bucket_rate(
    skus: Sequence[billing_v1.Sku], location: str, location_type: str, storage_class: str
) -> float | None:
    """USD per GiB-month of a Standard bucket in `location` (`location_type`: region, dual-region or
    multi-region, as the bucket reports it); None for another class or no single matching price."""
    if storage_class.upper() != "STANDARD":
        return None
    word = _LOCATION_TYPE_WORDS.get(location_type.lower())
    found = []
    for sku in _storage_skus(skus, location):
        if not _STANDARD.search(sku.description):
            continue
        named = {w for w in _LOCATION_TYPE_WORDS.values() if w in sku.description.lower()}
        if (word is None and not named) or (word is not None and named == {word}):
            found.append(sku)
    return _one_price(found)


def registry_rate(skus: Sequence[billing_v1.Sku], location: str) -> float | None:
    """USD per GiB-month (past the free tier) of Artifact Registry storage in `location`."""
    found = [sku for sku in _storage_skus(skus, location) if re.search(r"storage", sku.description, re.I)]
    return _one_price(found)


class StorageCatalog:
    """The two services' SKUs, listed once per process; None where the catalog cannot be read (said once)."""

    _lock = threading.Lock()
    _skus: dict[str, list[billing_v1.Sku] | None] = {}

    @classmethod
    def skus(cls, service: str, project: str | None) -> list[billing_v1.Sku] | None:
        with cls._lock:
            if service not in cls._skus:
                try:
                    cls._skus[service] = _list(service, project)
                except (gexc.GoogleAPICallError, auth_exceptions.GoogleAuthError) as exc:
                    cls._skus[service] = None
                    print(
                        f"[prices] Cloud Billing Catalog unreadable for {service} ({type(exc).__name__}: "
                        f"{exc}); using the dated table",
                        file=sys.stderr,
                        flush=True,
                    )
            return cls._skus[service]

    @classmethod
    def forget(cls) -> None:
        with cls._lock:
            cls._skus = {}


def _list(service: str, project: str | None) -> list[billing_v1.Sku] | None:
    """The SKUs of the service named `service`, in USD, all pages; None when no service has that name."""
    client = billing_v1.CloudCatalogClient(
        **client_kwargs(CloudCatalogGrpcTransport, ENDPOINT, quota_project=project)
    )
    services = client.list_services(timeout=CALL_TIMEOUT_SECONDS)
    named = [s.name for s in services if s.display_name == service]
    if len(named) != 1:
        return None
    request = billing_v1.ListSkusRequest(parent=named[0], currency_code="USD", page_size=5000)
    return list(client.list_skus(request=request, timeout=CALL_TIMEOUT_SECONDS))
