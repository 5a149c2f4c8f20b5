"""A fake IAM admin service (`google.iam.admin.v1.IAM`: GetRole, GetServiceAccount, TestIamPermissions), for a
project's custom roles and service accounts.

Served over real gRPC so the real `IAMClient` reaches it through `VERTEX_AI_EMULATOR_HOST`. It answers as
Google's IAM reference describes (read 2026-11-25):
- roles.get (https://cloud.google.com/iam/docs/reference/rest/v1/projects.roles/get): a custom role is
  `projects/<p>/roles/<id>` and reading it needs `iam.roles.get` on the project; one that was never created is
  NOT_FOUND; a deleted one is still returned, with `deleted` true, until IAM purges it.
- serviceAccounts.get (https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts/get):
  `projects/<p>/serviceAccounts/<email or unique id>`, needs `iam.serviceAccounts.get`; a missing account is
  NOT_FOUND, but PERMISSION_DENIED when named with the `-` project wildcard ("403 Forbidden instead of 404"),
  and PERMISSION_DENIED to a caller who may not read accounts there.
- serviceAccounts.testIamPermissions (https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts/testIamPermissions):
  the subset of the requested permissions the caller holds on the account, its own policy's and those
  inherited from its project's (https://cloud.google.com/iam/docs/resource-hierarchy-access-control); calling
  it needs no permission. A missing account is answered as `get` answers it.
"""

from __future__ import annotations

import re

import grpc
from google.cloud import iam_admin_v1
from google.iam.v1 import iam_policy_pb2

from tests.fakes.caller import Caller
from tests.fakes.grpc_fake import Abort, FakeService, Protobuf, serialize_protobuf

SERVICE = "google.iam.admin.v1.IAM"
_ROLE = re.compile(r"^projects/(?P<project>[^/]+)/roles/(?P<id>[^/]+)$")
_ACCOUNT = re.compile(r"^projects/(?P<project>[^/]+)/serviceAccounts/(?P<key>[^/]+)$")


class FakeIamAdmin(FakeService):
    def __init__(self, caller: Caller) -> None:
        super().__init__()
        self.caller = caller
        self.roles: dict[str, iam_admin_v1.Role] = {}
        self.accounts: dict[str, iam_admin_v1.ServiceAccount] = {}  # by e-mail

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

    def add_account(self, project_id: str, account_id: str, disabled: bool = False) -> str:
        """A user-managed account `account_id` in `project_id`; returns its e-mail (the caller's resource key
        for grants on it is `projects/<project>/serviceAccounts/<email>`)."""
        email = f"{account_id}@{project_id}.iam.gserviceaccount.com"
        with self._lock:
            self.accounts[email] = iam_admin_v1.ServiceAccount(
                name=f"projects/{project_id}/serviceAccounts/{email}",
                project_id=project_id,
                unique_id=str(100000000000000000000 + len(self.accounts)),
                email=email,
                disabled=disabled,
            )
        return email

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE,
            {
                "GetRole": (self._get_role, iam_admin_v1.GetRoleRequest, iam_admin_v1.Role.serialize),
                "GetServiceAccount": (
                    self._get_account,
                    iam_admin_v1.GetServiceAccountRequest,
                    iam_admin_v1.ServiceAccount.serialize,
                ),
                "TestIamPermissions": (
                    self._test,
                    Protobuf(iam_policy_pb2.TestIamPermissionsRequest),
                    serialize_protobuf,
                ),
            },
        )

    def _get_role(self, request: iam_admin_v1.GetRoleRequest) -> iam_admin_v1.Role:
        match = _ROLE.match(request.name)
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

    def _account(self, name: str, permission: str | None) -> iam_admin_v1.ServiceAccount:
        """The account `name` names, or the error Google answers; `permission`: what reading it needs."""
        match = _ACCOUNT.match(name)
        if not match:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid service account name: {name}")
        project, key = match["project"], match["key"]
        account = next(
            (
                a
                for a in self.accounts.values()
                if key in (a.email, a.unique_id) and project in ("-", a.project_id)
            ),
            None,
        )
        needed = permission or "iam.serviceAccounts.get"
        denied = Abort(
            grpc.StatusCode.PERMISSION_DENIED,
            f"Permission '{needed}' denied on resource (or it may not exist).",
        )
        if account is None:
            if project == "-" or not self.caller.holds(f"projects/{project}", "iam.serviceAccounts.get"):
                raise denied
            raise Abort(grpc.StatusCode.NOT_FOUND, f"Service account {name} does not exist.")
        if permission and not self.caller.holds(account.name, permission, inherits_from=_project(account)):
            raise denied
        return account

    def _get_account(self, request: iam_admin_v1.GetServiceAccountRequest) -> iam_admin_v1.ServiceAccount:
        return self._account(request.name, "iam.serviceAccounts.get")

    def _test(
        self, request: iam_policy_pb2.TestIamPermissionsRequest
    ) -> iam_policy_pb2.TestIamPermissionsResponse:
        account = self._account(request.resource, None)
        held = self.caller.subset(account.name, request.permissions, inherits_from=_project(account))
        return iam_policy_pb2.TestIamPermissionsResponse(permissions=held)


def _project(account: iam_admin_v1.ServiceAccount) -> tuple[str]:
    return (f"projects/{account.project_id}",)
