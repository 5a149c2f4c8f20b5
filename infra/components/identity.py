"""The training jobs' runtime service account and the few grants it needs (no keys, no primitive roles)."""

from __future__ import annotations

import pulumi

from infra.components.service_account import ServiceAccountIdentity
from infra.least_privilege.custom_roles import TENSORBOARD_UPLOADER

BUCKET_ROLE = "roles/storage.objectAdmin"
# TensorFlow's GCS filesystem reads the bucket itself (GET bucket: storage.buckets.get) when it creates the
# job's output folders; objectAdmin has only storage.objects.*. legacyBucketReader adds exactly
# storage.buckets.get and storage.objects.list, granted on this bucket only
# (https://cloud.google.com/storage/docs/access-control/iam-roles).
BUCKET_METADATA_ROLE = "roles/storage.legacyBucketReader"
BUCKET_ROLES = (BUCKET_ROLE, BUCKET_METADATA_ROLE)
REPOSITORY_ROLE = "roles/artifactregistry.reader"
PROJECT_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter")


def tensorboard_role(project: str) -> str:
    """Vertex's TensorBoard integration uploads the job's event files as the job's account. Google documents
    roles/aiplatform.user for it, which can also create jobs the kill switch never sees: the bootstrap's
    custom role holds only what the uploader calls (infra/least_privilege/custom_roles.py)."""
    return TENSORBOARD_UPLOADER.name(project)


def account_id(stack: str) -> str:
    return f"vt-{stack}-job"


class JobIdentity(ServiceAccountIdentity):
    """The training jobs' account; jobs depend on its `grants` so they start with their permissions."""

    def __init__(
        self,
        name: str,
        *,
        project: str,
        stack: str,
        bucket: pulumi.Input[str],
        repository: pulumi.Input[str],
        region: str,
        tensorboard: bool,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            "vertex-training:stack:JobIdentity",
            name,
            account_name="job-sa",
            project=project,
            account_id=account_id(stack),
            display_name=f"vertex-training {stack} training jobs",
            description="Runtime identity of this stack's Vertex AI CustomJobs (managed by Pulumi).",
            opts=opts,
        )
        for role in BUCKET_ROLES:
            self.grant_bucket(f"job-bucket-{role.split('.')[-1].lower()}", bucket, role)
        self.grant_repository(
            "job-repository-reader",
            project=project,
            region=region,
            repository=repository,
            role=REPOSITORY_ROLE,
        )
        for role in PROJECT_ROLES:
            self.grant_project(f"job-{role.split('/')[1].replace('.', '-').lower()}", project, role)
        if tensorboard:
            self.grant_project("job-tensorboard-uploader", project, tensorboard_role(project))
        self.register_outputs({"email": self.email})
