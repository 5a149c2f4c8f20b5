"""A fake Resource Manager (`google.cloud.resourcemanager.v3.Projects`: GetProject, TestIamPermissions).

Served over real gRPC so the real `ProjectsClient` reaches it through `VERTEX_AI_EMULATOR_HOST`. It answers as
the v3 reference describes (https://cloud.google.com/resource-manager/reference/rest/v3/projects, read
2026-11-25): projects.get needs `resourcemanager.projects.get`, and a project that does not exist or that the
caller cannot see is PERMISSION_DENIED either way; testIamPermissions needs no permission and returns the
subset of the requested permissions the caller holds.
"""

from __future__ import annotations

import grpc
from google.cloud import resourcemanager_v3
from google.iam.v1 import iam_policy_pb2

from tests.fakes.caller import Caller
from tests.fakes.grpc_fake import Abort, FakeService, Protobuf, serialize_protobuf

SERVICE = "google.cloud.resourcemanager.v3.Projects"


class FakeProjects(FakeService):
    def __init__(self, caller: Caller) -> None:
        super().__init__()
        self.caller = caller
        self.projects: dict[str, resourcemanager_v3.Project] = {}

    def add_project(
        self, project_id: str, number: int = 123456789012, state: str = "ACTIVE"
    ) -> resourcemanager_v3.Project:
        project = resourcemanager_v3.Project(
            name=f"projects/{number}",
            project_id=project_id,
            display_name=project_id,
            state=resourcemanager_v3.Project.State[state],
        )
        with self._lock:
            self.projects[project_id] = project
        return project

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE,
            {
                "GetProject": (
                    self._get,
                    resourcemanager_v3.GetProjectRequest,
                    resourcemanager_v3.Project.serialize,
                ),
                "TestIamPermissions": (
                    self._test,
                    Protobuf(iam_policy_pb2.TestIamPermissionsRequest),
                    serialize_protobuf,
                ),
            },
        )

    def _find(self, name: str) -> resourcemanager_v3.Project | None:
        key = name.removeprefix("projects/")
        return next((p for p in self.projects.values() if key in (p.project_id, p.name.split("/")[1])), None)

    def _denied(self, name: str, permission: str) -> Abort:
        return Abort(
            grpc.StatusCode.PERMISSION_DENIED,
            f"Permission '{permission}' denied on resource '//cloudresourcemanager.googleapis.com/{name}' "
            "(or it may not exist).",
        )

    def _get(self, request: resourcemanager_v3.GetProjectRequest) -> resourcemanager_v3.Project:
        project = self._find(request.name)
        permission = "resourcemanager.projects.get"
        if project is None or not self.caller.holds(f"projects/{project.project_id}", permission):
            raise self._denied(request.name, permission)
        return project

    def _test(
        self, request: iam_policy_pb2.TestIamPermissionsRequest
    ) -> iam_policy_pb2.TestIamPermissionsResponse:
        project = self._find(request.resource)
        held = self.caller.subset(f"projects/{project.project_id}", request.permissions) if project else []
        return iam_policy_pb2.TestIamPermissionsResponse(permissions=held)
