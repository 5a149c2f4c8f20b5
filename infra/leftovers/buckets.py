"""The stack's buckets (its `<project>-<stack>-training` bucket and any bucket carrying its labels) and the
Google-created one docs/stack.md names under "Ending at zero", with their size and monthly price.

Cloud Functions copies the kill switch's source into `gcf-v2-sources-<project number>-<region>`, a bucket it
creates and keeps (https://cloud.google.com/functions/docs/building); it is listed for a stack with the kill
switch, as shared by every function of the project in that region. A bucket's size counts every object
version and its soft-deleted objects: both are billed storage (objects.list `versions` and `softDeleted`,
Cloud Storage JSON API). google-cloud-storage honours STORAGE_EMULATOR_HOST.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.cloud import storage

from infra.leftovers import prices
from infra.leftovers.items import Found, Item, size_text

GCF_SOURCES = "gcf-v2-sources-"


@dataclass(frozen=True)
class Wanted:
    project: str
    region: str  # the stack's home region: where its function's sources bucket is
    bucket_name: str
    labels: dict[str, str]  # the stack's labels: pulumi_project, pulumi_stack
    kill_switch: bool


def _ours(bucket: storage.Bucket, wanted: Wanted) -> str | None:
    """Why `bucket` is a leftover of the stack ("stack" or "google"), None when it is not."""
    labels = bucket.labels or {}
    if bucket.name == wanted.bucket_name or all(labels.get(k) == v for k, v in wanted.labels.items()):
        return "stack"
    if (
        wanted.kill_switch
        and bucket.name.startswith(GCF_SOURCES)
        and bucket.name.endswith(f"-{wanted.region}")
    ):
        return "google"
    return None


def _size(client: storage.Client, bucket: str) -> tuple[int, int, int]:
    """(bytes, objects, of which soft-deleted) over every version and every soft-deleted object."""
    size = count = deleted = 0
    for blob in client.list_blobs(bucket, versions=True):
        size, count = size + (blob.size or 0), count + 1
    for blob in client.list_blobs(bucket, soft_deleted=True):
        size, count, deleted = size + (blob.size or 0), count + 1, deleted + 1
    return size, count, deleted


def item(client: storage.Client, bucket: storage.Bucket, why: str) -> tuple[Item, list[str]]:
    location = (bucket.location or "").lower()
    remove = f"gcloud storage rm --recursive gs://{bucket.name}"
    if why == "google":
        remove += "   # only if no other function of the project uses it (docs/stack.md, Ending at zero)"
    try:
        size, count, deleted = _size(client, bucket.name)
    except Exception as exc:  # the bucket is there: say so, with what could not be read
        problem = f"bucket {bucket.name}: its objects ({type(exc).__name__}: {exc})"
        return Item("bucket", bucket.name, location, "size unknown", True, "no sourced price", remove), [
            problem
        ]
    cost = prices.bucket_cost(size, location, bucket.storage_class or "STANDARD")
    soft = f", {deleted} soft-deleted" if deleted else ""
    kind = "bucket (Google-created)" if why == "google" else "bucket"
    return (
        Item(
            kind=kind,
            name=bucket.name,
            region=location,
            state=f"{size_text(size)} in {count} object(s){soft}",
            bills=size > 0,
            cost=cost.text if size else "free (empty)",
            remove=remove,
            monthly_usd=cost.usd if size else 0.0,
            price_source=cost.source,
            size_bytes=size,
        ),
        [],
    )


def find(wanted: Wanted) -> Found:
    found = Found()
    client = storage.Client(project=wanted.project)
    try:
        buckets = [(b, _ours(b, wanted)) for b in client.list_buckets(project=wanted.project)]
    except Exception as exc:  # no storage.buckets.list, an outage: the buckets are not known
        found.cannot_tell.append(f"buckets of project {wanted.project} ({type(exc).__name__}: {exc})")
        return found
    for bucket, why in buckets:
        if why:
            made, problems = item(client, bucket, why)
            found.items.append(made)
            found.cannot_tell += problems
    return found
