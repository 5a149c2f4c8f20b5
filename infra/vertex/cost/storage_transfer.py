"""What reading training data across regions costs: the preview line for a shape outside the bucket's region.

The bucket is in the stack's (home) region. Vertex recommends the job's region for the
bucket and requires a regional bucket for training, but a job may read from another region (Vertex AI
"Locations"; "Cloud Storage as a mounted file system"). Cloud Storage bills such reads as data transfer
between regions (Cloud Storage pricing, "Data transfer within Google Cloud", PRICING_URL): data that stays in
its location is free, and between two North American locations the page gives USD 0.02 per GiB (as read for
issue 25 on 2026-11-25; the copy available to this review stopped before that table, so the figure is the
issue's reading). Other pairs are said to be billed with no figure. NORTH_AMERICA: the page's own "North
America" group of locations (its data storage table, read 2026-11-25).
"""

from __future__ import annotations

from infra.vertex.capacity.placement import Shape

PRICING_URL = "https://cloud.google.com/storage/pricing#network-buckets"
READ = "2026-11-25"
NORTH_AMERICA = frozenset(
    {
        "us-central1",
        "us-east1",
        "us-east4",
        "us-east5",
        "us-west1",
        "us-west2",
        "us-west3",
        "us-west4",
        "us-south1",
        "northamerica-northeast1",
        "northamerica-northeast2",
        "northamerica-south1",
    }
)
NORTH_AMERICA_USD_PER_GIB = 0.02


def line(home: str | None, shape: Shape) -> str | None:
    """The preview line for a shape whose region is not `home`, the bucket's; None for a shape in it (or
    while a preview does not know the home region)."""
    if not shape.region or not home or shape.region == home:
        return None
    billed = (
        f"billed at USD {NORTH_AMERICA_USD_PER_GIB:.2f}/GiB"
        if home in NORTH_AMERICA and shape.region in NORTH_AMERICA
        else "billed as inter-region data transfer per GiB (no figure for this pair here)"
    )
    return (
        f"in {shape.region}: training data is read across regions from the bucket in {home}, {billed} "
        f"(Cloud Storage pricing, {PRICING_URL}, read {READ})"
    )
