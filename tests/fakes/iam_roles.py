"""A fake IAM admin service (`google.iam.admin.v1.IAM`: GetRole), for a project's custom roles.

Served over real gRPC so the real `IAMClient` reaches it through `VERTEX_AI_EMULATOR_HOST`. It answers as the
roles.get reference describes (https://cloud.google.com/iam/docs/reference/rest/v1/projects.roles/get, read
2026-11-25): a custom role is `projects/<p>/roles/<id>` and reading it needs `iam.roles.get` on the project;
one that was never created is NOT_FOUND; a deleted one is still returned, with `deleted` true, until IAM
purges it.
"""

from __future__ import annotations

import re

import grpc
from google.cloud import iam_admin_v1

from tests.fakes.caller import Caller
from tests.fakes.grpc_fake import Abort, FakeService

SERVICE = "google.iam.admin.v1.IAM"
_NAME = re.compile(r"^projects/(?P<project>[^/]+)/roles/(?P<id>[^/]+)$")


class FakeIamRoles(FakeService):
    def __init__(self, caller: Caller) -> None:
        super().__init__()
        self.caller = caller
        self.roles: dict[str, iam_admin_v1.Role] = {}

    def add_role(
        self, project_id: str, role_id: str, permissions: tuple[str, ...], deleted: bool = False
    ) -> None:
        name = f"projects/{project_id}/roles/{role_id}"
        with self._lock:
            self.roles[name] = iam_admin_v1.Role(
                name=name,
                title=role_id,
                included_permissions=list(permissions),
                stage=iam_admin_v1.Role.RoleLaunchStage.GA,
                deleted=deleted,
            )

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE, {"GetRole": (self._get, iam_admin_v1.GetRoleRequest, iam_admin_v1.Role.serialize)}
        )

    def _get(self, request: iam_admin_v1.GetRoleRequest) -> iam_admin_v1.Role:
        match = _NAME.match(request.name)
        if not match:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid role name: {request.name}")
        if not self.caller.holds(f"projects/{match['project']}", "iam.roles.get"):
            raise Abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"Permission 'iam.roles.get' denied on resource '{request.name}' (or it may not exist).",
            )
        if request.name not in self.roles:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"The role named {request.name} was not found.")
        return self.roles[request.name]
