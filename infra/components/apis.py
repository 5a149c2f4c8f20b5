"""Google APIs the stack needs, enabled and never disabled on destroy (other workloads may use them)."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

BASE_APIS = (
    "aiplatform.googleapis.com",
    "artifactregistry.googleapis.com",
    "billingbudgets.googleapis.com",
    "cloudbilling.googleapis.com",  # list prices: Cloud Billing Catalog (infra/vertex/cost/pricing.py)
    "cloudquotas.googleapis.com",  # the training job's GPU quota pre-check (infra/vertex/capacity/quotas.py)
    "cloudresourcemanager.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "pubsub.googleapis.com",
    "storage.googleapis.com",
)


class Apis(pulumi.ComponentResource):
    """One `projects.Service` per API; everything else in the stack depends on this component."""

    def __init__(
        self, name: str, project: str, services: list[str], opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("vertex-training:stack:Apis", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.services = [
            gcp.projects.Service(
                service.split(".")[0],
                project=project,
                service=service,
                # Disabling an API on destroy would break anything else in the project that uses it.
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=child,
            )
            for service in sorted(set(services))
        ]
        # No fixed wait after enabling: the first use of an API retries while it is still refused
        # (components/propagation.py, api_hooks; the dynamic providers' own retries, dynamic/propagation.py).
        self.register_outputs({"services": [s.service for s in self.services]})
