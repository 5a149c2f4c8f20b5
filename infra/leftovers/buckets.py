"""The stack's buckets (its `<project>-<stack>-training` bucket and any bucket carrying its labels) and the
Google-created copy of its function's source that docs/stack.md names under "Ending at zero", with their size
and monthly price.

Cloud Functions copies a function's source into `gcf-v2-sources-<project number>-<region>`, a bucket it
creates and keeps (https://cloud.google.com/functions/docs/building), shared by every function of the project
in that region; a function's source lies under `<function name>/` there (`<name>/function-source.zip`, as
`gcloud functions describe` shows it in `sourceProvenance.resolvedStorageSource`; published describe outputs,
read 2026-11-26). So only the kill switch's own folder is the stack's leftover, and removing that folder
touches no other function's source. A size counts every object version and the soft-deleted objects: both are
billed storage (objects.list `versions` and `softDeleted`, Cloud Storage JSON API). google-cloud-storage
honours STORAGE_EMULATOR_HOST.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.cloud import storage  # type: ignore[attr-defined]  # google-cloud-storage has no py.typed

from infra.leftovers import prices, storage_prices
from infra.leftovers.items import Found, Item, size_text

GCF_SOURCES = "gcf-v2-sources-"


@dataclass(frozen=True)
class Wanted:
    project: str
    region: str  # the stack's home region: where its function's sources bucket is
    bucket_name: str
    labels: dict[str, str]  # the stack's labels: pulumi_project, pulumi_stack
    function: str | None  # the kill switch's function name; None for a stack without one

    def ours(self, bucket: storage.Bucket) -> bool:
        labels = bucket.labels or {}
        return bucket.name == self.bucket_name or all(labels.get(k) == v for k, v in self.labels.items())

    def function_sources(self, bucket: storage.Bucket) -> str | None:
        """The stack's folder in Cloud Functions' sources bucket of its region, None for any other bucket."""
        if self.function and bucket.name.startswith(GCF_SOURCES) and bucket.name.endswith(f"-{self.region}"):
            return f"{self.function}/"
        return None


@dataclass(frozen=True)
class Size:
    bytes: int
    objects: int
    soft_deleted: int

    @property
    def text(self) -> str:
        soft = f", {self.soft_deleted} soft-deleted" if self.soft_deleted else ""
        return f"{size_text(self.bytes)} in {self.objects} object(s){soft}"


def measure(client: storage.Client, bucket: str, prefix: str = "") -> Size:
    """Every version and every soft-deleted object under `prefix`."""
    size = count = deleted = 0
    for blob in client.list_blobs(bucket, prefix=prefix or None, versions=True):
        size, count = size + (blob.size or 0), count + 1
    for blob in client.list_blobs(bucket, prefix=prefix or None, soft_deleted=True):
        size, count, deleted = size + (blob.size or 0), count + 1, deleted + 1
    return Size(size, count, deleted)


def live_rate(bucket: storage.Bucket, project: str) -> float | None:
    """The Standard storage price of its location from the Billing Catalog; None where it has none."""
    skus = storage_prices.StorageCatalog.skus(storage_prices.STORAGE_SERVICE, project)
    if skus is None:
        return None
    location, kind = (bucket.location or "").lower(), bucket.location_type or "region"
    return storage_prices.bucket_rate(skus, location, kind, bucket.storage_class or "STANDARD")


def _item(kind: str, name: str, bucket: storage.Bucket, size: Size, remove: str, project: str) -> Item:
    location = (bucket.location or "").lower()
    live = live_rate(bucket, project) if size.bytes else None
    cost = prices.bucket_cost(size.bytes, location, bucket.storage_class or "STANDARD", live)
    return Item(
        kind=kind,
        name=name,
        region=location,
        state=size.text,
        bills=size.bytes > 0,
        cost=cost.text if size.bytes else "free (empty)",
        remove=remove,
        monthly_usd=cost.usd if size.bytes else 0.0,
        price_source=cost.source,
        size_bytes=size.bytes,
    )


def _read(client: storage.Client, bucket: storage.Bucket, wanted: Wanted, found: Found) -> None:
    """The bucket's item (or its function-source folder's), or what could not be read of it."""
    if wanted.ours(bucket):
        kind, name, prefix = "bucket", bucket.name, ""
        remove = f"gcloud storage rm --recursive gs://{bucket.name}"
    elif folder := wanted.function_sources(bucket):
        kind, name, prefix = "function source (Google-created)", f"{bucket.name}/{folder}", folder
        remove = f"gcloud storage rm --recursive gs://{bucket.name}/{folder}"
    else:
        return
    try:
        size = measure(client, bucket.name, prefix)
    except Exception as exc:  # the bucket is there: say so, with what could not be read
        location = (bucket.location or "").lower()
        found.items.append(Item(kind, name, location, "size unknown", True, "no sourced price", remove))
        found.cannot_tell.append(f"bucket {bucket.name}: its objects ({type(exc).__name__}: {exc})")
        return
    if prefix and not size.objects:
        return  # the shared bucket holds nothing of this stack
    found.items.append(_item(kind, name, bucket, size, remove, wanted.project))


def find(wanted: Wanted) -> Found:
    found = Found()
    client = storage.Client(project=wanted.project)
    try:
        buckets = list(client.list_buckets(project=wanted.project))
    except Exception as exc:  # no storage.buckets.list, an outage: the buckets are not known
        found.cannot_tell.append(f"buckets of project {wanted.project} ({type(exc).__name__}: {exc})")
        return found
    for bucket in buckets:
        _read(client, bucket, wanted, found)
    return found
