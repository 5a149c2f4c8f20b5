"""The Artifact Registry Docker repository for the trainer image, with cleanup policies."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from infra.components.options import children

KEEP_RECENT_VERSIONS = 5
DELETE_AFTER = f"{30 * 24 * 3600}s"


def cleanup_policies() -> list[gcp.artifactregistry.RepositoryCleanupPolicyArgsDict]:
    """Keep the last few versions (rollbacks, running jobs); delete the rest after 30 days."""
    return [
        {"id": "keep-recent", "action": "KEEP", "most_recent_versions": {"keep_count": KEEP_RECENT_VERSIONS}},
        {
            "id": "delete-old",
            "action": "DELETE",
            "condition": {"tag_state": "ANY", "older_than": DELETE_AFTER},
        },
    ]


def repository_id(stack: str) -> str:
    """One repository per stack: a second stack in the same project must not collide (ALREADY_EXISTS)."""
    return f"vertex-training-{stack}"


def registry_host(region: str) -> str:
    return f"{region}-docker.pkg.dev"


def repository_url(project: str, region: str, repository_id: str) -> str:
    """Known before the repository exists, so image tags are plain strings (deterministic)."""
    return f"{registry_host(region)}/{project}/{repository_id}"


class Registry(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        *,
        project: str,
        region: str,
        repository_id: str,
        labels: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:stack:Registry", name, None, opts)
        self.repository = gcp.artifactregistry.Repository(
            "repository",
            project=project,
            location=region,
            repository_id=repository_id,
            format="DOCKER",
            description="vertex-training trainer images (tagged by content, referenced by digest)",
            cleanup_policies=cleanup_policies(),
            cleanup_policy_dry_run=False,
            labels=labels,
            opts=children(self, opts),
        )
        self.url = repository_url(project, region, repository_id)
        self.register_outputs({"url": self.url, "name": self.repository.name})
