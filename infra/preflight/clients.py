"""The Google API clients preflight reads with: each on its global endpoint with Application Default
Credentials, or plain gRPC to VERTEX_AI_EMULATOR_HOST (infra/dynamic/endpoints.py).

`quota_project`: where the calls are billed when the credentials name no quota project. A client-based API
refuses user credentials without one (https://cloud.google.com/docs/authentication/troubleshoot-adc, read
2026-11-25); that page does not say which APIs are client-based, so every client here gets one.
"""

from __future__ import annotations

from google.cloud import billing_v1, iam_admin_v1, resourcemanager_v3, service_usage_v1
from google.cloud.billing_v1.services.cloud_billing.transports import CloudBillingGrpcTransport
from google.cloud.iam_admin_v1.services.iam.transports import IAMGrpcTransport
from google.cloud.resourcemanager_v3.services.projects.transports import ProjectsGrpcTransport
from google.cloud.service_usage_v1.services.service_usage.transports import ServiceUsageGrpcTransport

from infra.dynamic.endpoints import client_kwargs

CALL_TIMEOUT_SECONDS = 30.0


def projects(quota_project: str | None) -> resourcemanager_v3.ProjectsClient:
    return resourcemanager_v3.ProjectsClient(
        **client_kwargs(ProjectsGrpcTransport, "cloudresourcemanager.googleapis.com", quota_project)
    )


def billing(quota_project: str | None) -> billing_v1.CloudBillingClient:
    return billing_v1.CloudBillingClient(
        **client_kwargs(CloudBillingGrpcTransport, "cloudbilling.googleapis.com", quota_project)
    )


def service_usage(quota_project: str | None) -> service_usage_v1.ServiceUsageClient:
    return service_usage_v1.ServiceUsageClient(
        **client_kwargs(ServiceUsageGrpcTransport, "serviceusage.googleapis.com", quota_project)
    )


def iam(quota_project: str | None) -> iam_admin_v1.IAMClient:
    return iam_admin_v1.IAMClient(**client_kwargs(IAMGrpcTransport, "iam.googleapis.com", quota_project))
