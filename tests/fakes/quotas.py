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
import threading
from collections.abc import Callable

import grpc
from google.cloud import cloudquotas_v1

SERVICE = "google.api.cloudquotas.v1.CloudQuotas"
_NAME = re.compile(
    r"^projects/(?P<project>[^/]+)/locations/global/services/(?P<service>[^/]+)/quotaInfos/(?P<id>[^/]+)$"
)
_PARENT = re.compile(r"^projects/(?P<project>[^/]+)/locations/global/services/(?P<service>[^/]+)$")


class FakeCloudQuotas:
    """Quota values per (project, service, quota id): a default and per-region overrides."""

    def __init__(self) -> None:
        self.infos: dict[str, cloudquotas_v1.QuotaInfo] = {}
        self.calls: list[tuple[str, str]] = []
        self.denied: bool = False
        self._lock = threading.Lock()

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
        methods = {
            "GetQuotaInfo": self._method(
                self._get, cloudquotas_v1.GetQuotaInfoRequest, cloudquotas_v1.QuotaInfo.serialize
            ),
            "ListQuotaInfos": self._method(
                self._list,
                cloudquotas_v1.ListQuotaInfosRequest,
                cloudquotas_v1.ListQuotaInfosResponse.serialize,
            ),
        }
        return grpc.method_handlers_generic_handler(SERVICE, methods)

    def _method(
        self, fn: Callable[[object, grpc.ServicerContext], object], request_type: type, serialize: Callable
    ) -> grpc.RpcMethodHandler:
        def behaviour(request: object, context: grpc.ServicerContext) -> object:
            with self._lock:
                self.calls.append((fn.__name__.lstrip("_"), getattr(request, "name", "") or request.parent))
                if self.denied:
                    context.abort(
                        grpc.StatusCode.PERMISSION_DENIED,
                        "Permission 'cloudquotas.quotas.get' denied on resource (or it may not exist).",
                    )
                return fn(request, context)

        return grpc.unary_unary_rpc_method_handler(
            behaviour, request_deserializer=request_type.deserialize, response_serializer=serialize
        )

    def _get(self, request: cloudquotas_v1.GetQuotaInfoRequest, context: grpc.ServicerContext) -> object:
        if not _NAME.match(request.name):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid resource name: {request.name}")
        if request.name not in self.infos:
            context.abort(grpc.StatusCode.NOT_FOUND, f"QuotaInfo {request.name} not found.")
        return self.infos[request.name]

    def _list(self, request: cloudquotas_v1.ListQuotaInfosRequest, context: grpc.ServicerContext) -> object:
        if not _PARENT.match(request.parent):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid parent: {request.parent}")
        found = [info for name, info in sorted(self.infos.items()) if name.startswith(request.parent + "/")]
        start = int(request.page_token or 0)
        size = request.page_size or 100
        token = str(start + size) if start + size < len(found) else ""
        return cloudquotas_v1.ListQuotaInfosResponse(
            quota_infos=found[start : start + size], next_page_token=token
        )
