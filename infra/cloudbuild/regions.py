"""Where Cloud Build runs builds (https://cloud.google.com/build/docs/locations, read 2026-11-25)."""

from __future__ import annotations

LOCATIONS_URL = "https://cloud.google.com/build/docs/locations"
# "Cloud Build is available in the following regions".
BUILD_REGIONS = frozenset(
    {
        "africa-south1",
        "asia-east1",
        "asia-east2",
        "asia-northeast1",
        "asia-northeast2",
        "asia-northeast3",
        "asia-south1",
        "asia-south2",
        "asia-southeast1",
        "asia-southeast2",
        "australia-southeast1",
        "australia-southeast2",
        "europe-central2",
        "europe-north1",
        "europe-north2",
        "europe-southwest1",
        "europe-west1",
        "europe-west2",
        "europe-west3",
        "europe-west4",
        "europe-west6",
        "europe-west8",
        "europe-west9",
        "europe-west10",
        "europe-west12",
        "me-central1",
        "me-central2",
        "me-west1",
        "northamerica-northeast1",
        "northamerica-northeast2",
        "northamerica-south1",
        "southamerica-east1",
        "southamerica-west1",
        "us-central1",
        "us-east1",
        "us-east4",
        "us-east5",
        "us-south1",
        "us-west1",
        "us-west2",
        "us-west3",
        "us-west4",
    }
)
# "Restricted regions for some projects": depending on usage, some projects may use Cloud Build only here.
# Which projects are restricted cannot be read ahead; builds.create refuses the others
# (FAILED_PRECONDITION).
ALWAYS_OPEN_REGIONS = (
    "us-central1",
    "us-west2",
    "europe-west1",
    "asia-east1",
    "australia-southeast1",
    "southamerica-east1",
)
