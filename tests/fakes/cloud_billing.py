"""A fake Cloud Billing (`google.cloud.billing.v1.CloudBilling`: GetProjectBillingInfo, TestIamPermissions).

Served over real gRPC so the real `CloudBillingClient` reaches it through `VERTEX_AI_EMULATOR_HOST`. It
answers
as google/cloud/billing/v1/cloud_billing.proto documents the API (google-cloud-billing 1.21.0, read
2026-11-25): getBillingInfo "requires the resourcemanager.projects.get permission" on the project and answers
`projects/<id>/billingInfo` with the linked account (`billingAccounts/<id>`, empty when none) and
`billing_enabled`; a billing account's testIamPermissions returns "the subset of the input permissions that
the caller is allowed".
"""

from __future__ import annotations

import grpc
from google.cloud import billing_v1
from google.iam.v1 import iam_policy_pb2

from tests.fakes.caller import Caller
from tests.fakes.grpc_fake import Abort, FakeService, Protobuf, serialize_protobuf

SERVICE = "google.cloud.billing.v1.CloudBilling"


class FakeCloudBilling(FakeService):
    def __init__(self, caller: Caller) -> None:
        super().__init__()
        self.caller = caller
        self.links: dict[str, str] = {}  # project id -> billing account id ("" = billing disabled)

    def link(self, project_id: str, account: str) -> None:
        with self._lock:
            self.links[project_id] = account

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE,
            {
                "GetProjectBillingInfo": (
                    self._info,
                    billing_v1.GetProjectBillingInfoRequest,
                    billing_v1.ProjectBillingInfo.serialize,
                ),
                "TestIamPermissions": (
                    self._test,
                    Protobuf(iam_policy_pb2.TestIamPermissionsRequest),
                    serialize_protobuf,
                ),
            },
        )

    def _info(self, request: billing_v1.GetProjectBillingInfoRequest) -> billing_v1.ProjectBillingInfo:
        project_id = request.name.removeprefix("projects/")
        if not self.caller.holds(f"projects/{project_id}", "resourcemanager.projects.get"):
            raise Abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"The caller does not have permission resourcemanager.projects.get on projects/{project_id}",
            )
        account = self.links.get(project_id, "")
        return billing_v1.ProjectBillingInfo(
            name=f"projects/{project_id}/billingInfo",
            project_id=project_id,
            billing_account_name=f"billingAccounts/{account}" if account else "",
            billing_enabled=bool(account),
        )

    def _test(
        self, request: iam_policy_pb2.TestIamPermissionsRequest
    ) -> iam_policy_pb2.TestIamPermissionsResponse:
        return iam_policy_pb2.TestIamPermissionsResponse(
            permissions=self.caller.subset(request.resource, request.permissions)
        )
