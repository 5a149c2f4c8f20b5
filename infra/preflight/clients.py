"""The Google API clients preflight reads with: each on its global endpoint with Application Default
Credentials, or plain gRPC to VERTEX_AI_EMULATOR_HOST (infra/vertex/endpoints.py)."""

from __future__ import annotations

from google.cloud import billing_v1, iam_admin_v1, resourcemanager_v3, service_usage_v1
from google.cloud.billing_v1.services.cloud_billing.transports import CloudBillingGrpcTransport
from google.cloud.iam_admin_v1.services.iam.transports import IAMGrpcTransport
from google.cloud.resourcemanager_v3.services.projects.transports import ProjectsGrpcTransport
from google.cloud.service_usage_v1.services.service_usage.transports import ServiceUsageGrpcTransport

from infra.vertex.endpoints import client_kwargs

# Resource-based APIs: a call is billed to the project it names, so no quota project is set for them.
CALL_TIMEOUT_SECONDS = 30.0


def projects() -> resourcemanager_v3.ProjectsClient:
    return resourcemanager_v3.ProjectsClient(
        **client_kwargs(ProjectsGrpcTransport, "cloudresourcemanager.googleapis.com")
    )


def billing() -> billing_v1.CloudBillingClient:
    return billing_v1.CloudBillingClient(
        **client_kwargs(CloudBillingGrpcTransport, "cloudbilling.googleapis.com")
    )


def service_usage() -> service_usage_v1.ServiceUsageClient:
    return service_usage_v1.ServiceUsageClient(
        **client_kwargs(ServiceUsageGrpcTransport, "serviceusage.googleapis.com")
    )


def iam() -> iam_admin_v1.IAMClient:
    return iam_admin_v1.IAMClient(**client_kwargs(IAMGrpcTransport, "iam.googleapis.com"))
