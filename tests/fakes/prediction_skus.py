"""Vertex AI prediction SKUs for the fake Billing Catalog, worded as billing records show them.

Sources (read 2026-11-29; docs/batch-prediction.md, Sources, says what each holds):
- A Google Cloud Japan billing report of an on-demand a3-highgpu-1g endpoint in us-central1 (zenn, "ハイエンド
  GPU が最大約半額に ..."): "Vertex AI: Online/Batch Prediction A3 Predefined Instance Core running in Iowa"
  (A002-4323-D900, $0.0293227 per hour), "... A3 Predefined Instance Ram running in Iowa" (2424-9F04-82A8,
  $0.0025534 per gigabyte hour); with flex-start, "Vertex AI: Online/Batch Prediction management fee on A3
  Instance Core in Iowa" (9AC1-7D9B-C47E).
- A billing-price reader pinning an A100 80GB endpoint's SKUs in us-central1: "Vertex AI: Online/Batch
  Prediction Nvidia A100 80gb GPU running in Iowa" (72B6-EE31-7A41, `h`), "... A2 Instance Core running in
  Americas" (F86F-168E-2FB6, `h`), "... A2 Instance Ram running in Americas" (2DBC-2378-4503, `GiBy.h`),
  "Vertex AI: Online/Batch Prediction management fee on A2 Instance Core in Iowa" (F559-0525-B823) and "... on
  A2 Instance RAM in Iowa" (8714-C1C7-9ABD).
- A price check run against the live catalog: "Vertex AI: Online/Batch Prediction N1 Predefined Instance Core
  running in" and "... N1 Predefined Instance Ram running in".
What no source shows, so the fake fills it as the proto documents the fields: the SKUs' category
(`usage_type` "OnDemand", `resource_group` left empty), which regions an "Americas" SKU lists, and every price
but the A3 ones: those are test values, not Google's.
"""

from __future__ import annotations

from tests.fakes.billing import FakeCloudCatalog

PREFIX = "Vertex AI: Online/Batch Prediction"
IOWA = ("us-central1",)
AMERICAS = ("us-central1", "us-east1", "us-east4", "us-west1")
# Test values (no source gives an N1 or A2 prediction price).
N1_CORE, N1_RAM = 0.0312, 0.0042
A2_CORE, A2_RAM, A100_80GB = 0.0351, 0.0047, 3.9021
A2_FEE_CORE, A2_FEE_RAM = 0.0046, 0.0006
# The billing report's figures (us-central1, read 2026-11-29).
A3_CORE, A3_RAM = 0.0293227, 0.0025534


def add_prediction_skus(fake: FakeCloudCatalog) -> None:
    """The prediction SKUs the sources show, with the management-fee SKUs beside them."""
    fake.add_sku(f"{PREFIX} N1 Predefined Instance Core running in Americas", N1_CORE, regions=AMERICAS)
    fake.add_sku(
        f"{PREFIX} N1 Predefined Instance Ram running in Americas", N1_RAM, regions=AMERICAS, unit="GiBy.h"
    )
    fake.add_sku(f"{PREFIX} A2 Instance Core running in Americas", A2_CORE, regions=AMERICAS)
    fake.add_sku(f"{PREFIX} A2 Instance Ram running in Americas", A2_RAM, regions=AMERICAS, unit="GiBy.h")
    fake.add_sku(f"{PREFIX} Nvidia A100 80gb GPU running in Iowa", A100_80GB, regions=IOWA)
    fake.add_sku(f"{PREFIX} management fee on A2 Instance Core in Iowa", A2_FEE_CORE, regions=IOWA)
    fake.add_sku(
        f"{PREFIX} management fee on A2 Instance RAM in Iowa", A2_FEE_RAM, regions=IOWA, unit="GiBy.h"
    )
    fake.add_sku(f"{PREFIX} A3 Predefined Instance Core running in Iowa", A3_CORE, regions=IOWA)
    fake.add_sku(f"{PREFIX} A3 Predefined Instance Ram running in Iowa", A3_RAM, regions=IOWA, unit="GiBy.h")
