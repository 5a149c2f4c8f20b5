"""The image builder's service account and its three grants (no keys, no default Cloud Build account)."""

from __future__ import annotations

import pulumi

from infra.components.service_account import ServiceAccountIdentity

# Push to this one repository.
REPOSITORY_ROLE = "roles/artifactregistry.writer"
# Read the uploaded build context, and only it: conditioned on the context prefix of the stack bucket.
SOURCE_ROLE = "roles/storage.objectViewer"
# A build run as a user-specified account must log to Cloud Logging or a user bucket
# (https://cloud.google.com/build/docs/securing-builds/configure-user-specified-service-accounts).
LOG_ROLE = "roles/logging.logWriter"


def account_id(stack: str) -> str:
    return f"vt-{stack}-build"


def source_condition(bucket: str, prefix: str) -> dict[str, str]:
    """IAM condition limiting object reads to `prefix` in `bucket` (uniform bucket-level access allows it).

    The bucket itself is named too: Cloud Build's source fetch lists the bucket (storage.objects.list is
    checked against `projects/_/buckets/<bucket>`, e.g. GoogleCloudPlatform/bigquery-dlp-remote-function#70),
    which reveals object names, not their contents.
    """
    return {
        "title": "build-context-only",
        "description": "Only the Cloud Build context archives of this stack.",
        "expression": (
            f'resource.name == "projects/_/buckets/{bucket}" || '
            f'resource.name.startsWith("projects/_/buckets/{bucket}/objects/{prefix}")'
        ),
    }


class BuilderIdentity(ServiceAccountIdentity):
    """The image builds' account; builds depend on its `grants` so they start with their rights."""

    def __init__(
        self,
        name: str,
        *,
        project: str,
        region: str,
        stack: str,
        bucket: pulumi.Input[str],
        source_prefix: str,
        repository: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            "vertex-training:cloudbuild:BuilderIdentity",
            name,
            account_name="build-sa",
            project=project,
            account_id=account_id(stack),
            display_name=f"vertex-training {stack} image builds",
            description="Runs this stack's Cloud Build builds of the trainer image (managed by Pulumi).",
            opts=opts,
        )
        self.grant_repository(
            "build-repository-writer",
            project=project,
            region=region,
            repository=repository,
            role=REPOSITORY_ROLE,
        )
        self.grant_bucket(
            "build-context-reader",
            bucket,
            SOURCE_ROLE,
            condition=pulumi.Output.from_input(bucket).apply(lambda b: source_condition(b, source_prefix)),
        )
        self.grant_project("build-logging-logwriter", project, LOG_ROLE)
        self.register_outputs({"email": self.email})
