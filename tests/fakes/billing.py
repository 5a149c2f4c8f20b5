"""A fake Cloud Billing Catalog (`google.cloud.billing.v1.CloudCatalog`: ListServices, ListSkus).

Served over real gRPC with the client library's own proto-plus types, beside the fake JobService
(`FakeJobService.start(fake_catalog.handler())`), so the real `CloudCatalogClient` reaches it through
`VERTEX_AI_EMULATOR_HOST`. It answers as google/cloud/billing/v1/cloud_catalog.proto documents the API
(google-cloud-billing 1.21.0, read 2026-11-22): `parent` is `services/<service id>` (an unknown one is
NOT_FOUND), pages of `page_size` with `next_page_token`, prices in `currency_code` (USD when unset); each SKU
has a category (`usage_type` such as "OnDemand" or "Preemptible"), `service_regions`, and a PricingInfo whose
expression gives `usage_unit` and tiered rates in ascending `start_usage_amount` (a free first tier where the
service has one). Google documents the fields, not the wording of Vertex's descriptions: the tests choose
descriptions in Compute Engine's words. Its prices are test values, not Google's.
"""

from __future__ import annotations

import grpc
from google.cloud import billing_v1
from google.type import money_pb2

from tests.fakes.grpc_fake import Abort, FakeService

SERVICE = "google.cloud.billing.v1.CloudCatalog"
VERTEX_SERVICE_ID = "C7E2-9256-1C43"


def _money(usd: float) -> money_pb2.Money:
    units = int(usd)
    return money_pb2.Money(currency_code="USD", units=units, nanos=round((usd - units) * 1e9))


class FakeCloudCatalog(FakeService):
    """SKUs per service id; `add_sku` publishes one the way Google shapes them."""

    def __init__(self) -> None:
        super().__init__()
        self.skus: dict[str, list[billing_v1.Sku]] = {VERTEX_SERVICE_ID: []}
        # Each service's display name, as ListServices gives it (other services: `add_sku(service_name=...)`).
        self.names: dict[str, str] = {VERTEX_SERVICE_ID: "Vertex AI"}

    def add_sku(
        self,
        description: str,
        usd: float,
        *,
        regions: tuple[str, ...] = ("us-central1",),
        usage_type: str = "OnDemand",
        unit: str = "h",
        resource_group: str = "",
        free_tier: bool = False,
        cheaper_tiers: tuple[tuple[float, float], ...] = (),
        service_id: str = VERTEX_SERVICE_ID,
        service_name: str = "Vertex AI",
        resource_family: str = "Compute",
    ) -> str:
        """One SKU priced `usd` per `unit` (after a free first tier when `free_tier`; `cheaper_tiers`:
        (start usage, USD) volume tiers after it, as tiered_rates lists them, ascending); returns its id."""
        with self._lock:
            sku_id = f"{len(self.skus.setdefault(service_id, [])) + 1:04X}-0000-0000"
            self.names[service_id] = service_name
            tier = billing_v1.PricingExpression.TierRate
            rates = [tier(start_usage_amount=0, unit_price=_money(0))] if free_tier else []
            rates.append(tier(start_usage_amount=1 if free_tier else 0, unit_price=_money(usd)))
            rates += [
                tier(start_usage_amount=start, unit_price=_money(price)) for start, price in cheaper_tiers
            ]
            self.skus[service_id].append(
                billing_v1.Sku(
                    name=f"services/{service_id}/skus/{sku_id}",
                    sku_id=sku_id,
                    description=description,
                    category=billing_v1.Category(
                        service_display_name=service_name,
                        resource_family=resource_family,
                        resource_group=resource_group,
                        usage_type=usage_type,
                    ),
                    service_regions=list(regions),
                    pricing_info=[
                        billing_v1.PricingInfo(
                            summary="",
                            pricing_expression=billing_v1.PricingExpression(
                                usage_unit=unit, display_quantity=1, tiered_rates=rates
                            ),
                            currency_conversion_rate=1,
                        )
                    ],
                    service_provider_name="Google",
                )
            )
            return sku_id

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE,
            {
                "ListServices": (
                    self._services,
                    billing_v1.ListServicesRequest,
                    billing_v1.ListServicesResponse.serialize,
                ),
                "ListSkus": (self._list, billing_v1.ListSkusRequest, billing_v1.ListSkusResponse.serialize),
            },
        )

    def _services(self, _request: billing_v1.ListServicesRequest) -> billing_v1.ListServicesResponse:
        return billing_v1.ListServicesResponse(
            services=[
                billing_v1.Service(name=f"services/{sid}", service_id=sid, display_name=self.names[sid])
                for sid in self.skus
            ]
        )

    def _list(self, request: billing_v1.ListSkusRequest) -> billing_v1.ListSkusResponse:
        service_id = request.parent.removeprefix("services/")
        if not request.parent.startswith("services/") or service_id not in self.skus:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"Service {request.parent} not found.")
        if request.currency_code not in ("", "USD"):
            raise Abort(grpc.StatusCode.UNIMPLEMENTED, "the fake serves USD prices only")
        found = self.skus[service_id]
        start = int(request.page_token or 0)
        size = request.page_size or 5000
        token = str(start + size) if start + size < len(found) else ""
        return billing_v1.ListSkusResponse(skus=found[start : start + size], next_page_token=token)
