"""A fake Cloud Quotas service (`google.api.cloudquotas.v1.CloudQuotas`: GetQuotaInfo, ListQuotaInfos).

Served over real gRPC with the client library's own proto-plus types, next to the fake JobService
(`FakeJobService.start(fake_quotas.handler())`), so the real `CloudQuotasClient` reaches it through
`VERTEX_AI_EMULATOR_HOST`. It answers as the API reference describes
(https://cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos): names are
`projects/<p>/locations/global/services/<service>/quotaInfos/<quota id>`, values live in `dimensionsInfos`
(one per region, and one without dimensions for the default), unknown quota ids are NOT_FOUND, and a caller
without `cloudquotas.quotas.get` gets PERMISSION_DENIED.
"""

from __future__ import annotations

import re

import grpc
from google.cloud import cloudquotas_v1

from tests.fakes.grpc_fake import Abort, FakeService

SERVICE = "google.api.cloudquotas.v1.CloudQuotas"
_NAME = re.compile(
    r"^projects/(?P<project>[^/]+)/locations/global/services/(?P<service>[^/]+)/quotaInfos/(?P<id>[^/]+)$"
)
_PARENT = re.compile(r"^projects/(?P<project>[^/]+)/locations/global/services/(?P<service>[^/]+)$")


class FakeCloudQuotas(FakeService):
    """Quota values per (project, service, quota id): a default and per-region overrides."""

    def __init__(self) -> None:
        super().__init__()
        self.infos: dict[str, cloudquotas_v1.QuotaInfo] = {}
        # True: every call is refused as to a caller without cloudquotas.quotas.get.
        self.denied: bool = False

    def set_quota(
        self,
        project: str,
        quota_id: str,
        *,
        default: int,
        regions: dict[str, int] | None = None,
        metric: str = "",
        service: str = "aiplatform.googleapis.com",
    ) -> None:
        """Publish a region-dimensioned quota the way Vertex AI's GPU quotas are shaped."""
        entries = [
            cloudquotas_v1.DimensionsInfo(
                dimensions={"region": region},
                details=cloudquotas_v1.QuotaDetails(value=value),
                applicable_locations=[region],
            )
            for region, value in (regions or {}).items()
        ]
        entries.append(cloudquotas_v1.DimensionsInfo(details=cloudquotas_v1.QuotaDetails(value=default)))
        name = f"projects/{project}/locations/global/services/{service}/quotaInfos/{quota_id}"
        with self._lock:
            self.infos[name] = cloudquotas_v1.QuotaInfo(
                name=name,
                quota_id=quota_id,
                metric=metric,
                service=service,
                is_precise=True,
                container_type=cloudquotas_v1.QuotaInfo.ContainerType.PROJECT,
                dimensions=["region"],
                quota_display_name=quota_id,
                metric_unit="1",
                dimensions_infos=entries,
            )

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE,
            {
                "GetQuotaInfo": (
                    self._get,
                    cloudquotas_v1.GetQuotaInfoRequest,
                    cloudquotas_v1.QuotaInfo.serialize,
                ),
                "ListQuotaInfos": (
                    self._list,
                    cloudquotas_v1.ListQuotaInfosRequest,
                    cloudquotas_v1.ListQuotaInfosResponse.serialize,
                ),
            },
        )

    def _check_permission(self) -> None:
        if self.denied:
            raise Abort(
                grpc.StatusCode.PERMISSION_DENIED,
                "Permission 'cloudquotas.quotas.get' denied on resource (or it may not exist).",
            )

    def _get(self, request: cloudquotas_v1.GetQuotaInfoRequest) -> cloudquotas_v1.QuotaInfo:
        self._check_permission()
        if not _NAME.match(request.name):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid resource name: {request.name}")
        if request.name not in self.infos:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"QuotaInfo {request.name} not found.")
        return self.infos[request.name]

    def _list(self, request: cloudquotas_v1.ListQuotaInfosRequest) -> cloudquotas_v1.ListQuotaInfosResponse:
        self._check_permission()
        if not _PARENT.match(request.parent):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid parent: {request.parent}")
        found = [info for name, info in sorted(self.infos.items()) if name.startswith(request.parent + "/")]
        start = int(request.page_token or 0)
        size = request.page_size or 100
        token = str(start + size) if start + size < len(found) else ""
        return cloudquotas_v1.ListQuotaInfosResponse(
            quota_infos=found[start : start + size], next_page_token=token
        )
