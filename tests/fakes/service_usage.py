"""A fake Service Usage (`google.api.serviceusage.v1.ServiceUsage`: BatchGetServices).

Served over real gRPC so the real `ServiceUsageClient` reaches it through `VERTEX_AI_EMULATOR_HOST`. It
answers
as the v1 reference describes services.batchGet (https://cloud.google.com/service-usage/docs/reference/rest/
v1/services/batchGet, read 2026-11-25): `parent` is `projects/<id or number>`, `names` are
`projects/<p>/services/<service>` and "a single request can get a maximum of 30 services at a time"; each
Service has its state, ENABLED or DISABLED; reading needs `serviceusage.services.get`.
"""

from __future__ import annotations

import grpc
from google.cloud import service_usage_v1

from tests.fakes.caller import Caller
from tests.fakes.grpc_fake import Abort, FakeService

SERVICE = "google.api.serviceusage.v1.ServiceUsage"
MAX_NAMES = 30


class FakeServiceUsage(FakeService):
    def __init__(self, caller: Caller) -> None:
        super().__init__()
        self.caller = caller
        self.enabled: dict[str, set[str]] = {}  # project id -> enabled services

    def enable(self, project_id: str, *services: str) -> None:
        with self._lock:
            self.enabled.setdefault(project_id, set()).update(services)

    def disable(self, project_id: str, *services: str) -> None:
        with self._lock:
            self.enabled.get(project_id, set()).difference_update(services)

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE,
            {
                "BatchGetServices": (
                    self._batch_get,
                    service_usage_v1.BatchGetServicesRequest,
                    service_usage_v1.BatchGetServicesResponse.serialize,
                )
            },
        )

    def _batch_get(
        self, request: service_usage_v1.BatchGetServicesRequest
    ) -> service_usage_v1.BatchGetServicesResponse:
        project_id = request.parent.removeprefix("projects/")
        if len(request.names) > MAX_NAMES:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"at most {MAX_NAMES} services per request")
        if not self.caller.holds(f"projects/{project_id}", "serviceusage.services.get"):
            raise Abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"Permission denied to get service on resource projects/{project_id}",
            )
        services = []
        for name in request.names:
            if not name.startswith(f"{request.parent}/services/"):
                raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"{name} is not under {request.parent}")
            service = name.rsplit("/", 1)[-1]
            on = service in self.enabled.get(project_id, set())
            services.append(
                service_usage_v1.Service(
                    name=name,
                    parent=request.parent,
                    config=service_usage_v1.ServiceConfig(name=service),
                    state=service_usage_v1.State.ENABLED if on else service_usage_v1.State.DISABLED,
                )
            )
        return service_usage_v1.BatchGetServicesResponse(services=services)
