"""Monthly storage prices `infra.leftovers` shows, each from the page it was read on (2026-11-26), in USD.

Cloud Storage, Standard storage in a region, "per GB per Month" (STORAGE_PAGE, its "Data storage" table, the
North America rows and the Europe rows through London as the copy read showed them). Google's storage "GB" is
the binary gigabyte (2^30 bytes: the same page's earlier wording, "1 GB = 2^30 bytes", and the Cloud Billing
catalog's storage unit GiBy.mo), so the figures are per GiB. A region not in the table has no sourced price
here, and nor has a dual- or multi-region bucket or another storage class.

Artifact Registry, storage "per GB / month": up to 0.5 GB free, USD 0.10 over it, the same for regional and
multi-regional repositories; the free tier counts the whole billing account, not one project (REGISTRY_PAGE).
So a repository's figure is a bound: at most its size x USD 0.10. That page does not say which GB it means;
the bound counts decimal GB (10^9 bytes), the larger count of the same bytes, so it holds either way.

Where the Cloud Billing Catalog answers for the location (storage_prices.py, read live: regions, dual- and
multi-regions), its price per GiB-month replaces the table's; the table is the offline fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.leftovers.storage_prices import CATALOG_SOURCE

READ = "2026-11-26"
STORAGE_PAGE = "https://cloud.google.com/storage/pricing#storage-pricing"
REGISTRY_PAGE = "https://cloud.google.com/artifact-registry/pricing"
GIB = 1024**3

STANDARD_USD_PER_GIB_MONTH: dict[str, float] = {
    "us-central1": 0.020,
    "us-east1": 0.020,
    "us-east4": 0.023,
    "us-east5": 0.020,
    "us-west1": 0.020,
    "us-west2": 0.023,
    "us-west3": 0.023,
    "us-west4": 0.023,
    "us-south1": 0.020,
    "northamerica-northeast1": 0.023,
    "northamerica-northeast2": 0.023,
    "northamerica-south1": 0.026,
    "europe-central2": 0.023,
    "europe-north1": 0.020,
    "europe-north2": 0.023,
    "europe-west1": 0.020,
    "europe-west2": 0.023,
}
GB = 1000**3
REGISTRY_USD_PER_GB_MONTH = 0.10
REGISTRY_FREE_GB = 0.5


def usd_text(usd: float) -> str:
    """An amount as people read a bill: cents, and "< USD 0.01" rather than a zero that is not one."""
    return "< USD 0.01" if 0 < usd < 0.005 else f"USD {usd:.2f}"


@dataclass(frozen=True)
class MonthlyCost:
    usd: float | None  # None: no sourced price
    text: str
    source: str | None = None
    bound: bool = False  # `usd` is an upper bound, not the price


def bucket_cost(size_bytes: int, location: str, storage_class: str, live: float | None = None) -> MonthlyCost:
    """A bucket's storage at its location's Standard price: the catalog's (`live`, USD per GiB-month) where
    it answered, else the page's where it gives one."""
    region = location.lower()
    if live is not None:
        usd = size_bytes / GIB * live
        text = f"{usd_text(usd)}/month (Standard storage, USD {live:.4f}/GiB-month)"
        return MonthlyCost(usd, text, f"{CATALOG_SOURCE}, Cloud Storage, {region}")
    rate = STANDARD_USD_PER_GIB_MONTH.get(region) if storage_class.upper() == "STANDARD" else None
    if rate is None:
        return MonthlyCost(None, f"no sourced price ({storage_class.title()} storage in {region})")
    usd = size_bytes / GIB * rate
    source = f"Cloud Storage pricing, {STORAGE_PAGE}, read {READ}"
    return MonthlyCost(usd, f"{usd_text(usd)}/month (Standard storage, USD {rate:.3f}/GiB-month)", source)


def repository_cost(size_bytes: int, live: float | None = None, location: str = "") -> MonthlyCost:
    """At most size (in decimal GB) x USD 0.10 a month: the first 0.5 GB of the billing account are free;
    with the catalog's rate (`live`, USD per GiB-month past the free tier), at most size in GiB x it."""
    if live is not None:
        usd = size_bytes / GIB * live
        text = (
            f"at most {usd_text(usd)}/month (USD {live:.4f}/GiB-month past the billing account's free "
            f"{REGISTRY_FREE_GB} GB)"
        )
        return MonthlyCost(usd, text, f"{CATALOG_SOURCE}, Artifact Registry, {location}", bound=True)
    usd = size_bytes / GB * REGISTRY_USD_PER_GB_MONTH
    source = f"Artifact Registry pricing, {REGISTRY_PAGE}, read {READ}"
    text = (
        f"at most {usd_text(usd)}/month (USD {REGISTRY_USD_PER_GB_MONTH:.2f}/GB-month; "
        f"the billing account's first {REGISTRY_FREE_GB} GB free)"
    )
    return MonthlyCost(usd, text, source, bound=True)
