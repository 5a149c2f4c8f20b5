"""Workload Identity pool and GitHub OIDC provider: only this repository's workflow runs can authenticate."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
# Claims of GitHub's OIDC token (https://docs.github.com/en/actions/reference/security/oidc). Identities are
# bound on `environment` and `repository[_id]`, never on the raw `sub` string, whose format GitHub is moving
# to immutable, id-based subjects for new and renamed repositories (and organisations may customise it).
ATTRIBUTE_MAPPING = {
    "google.subject": "assertion.sub",
    "attribute.actor": "assertion.actor",
    "attribute.repository": "assertion.repository",
    "attribute.repository_id": "assertion.repository_id",
    "attribute.ref": "assertion.ref",
    "attribute.environment": "assertion.environment",
}


def attribute_condition(repository: str, repository_id: str | None) -> str:
    """CEL evaluated on every GitHub token: tokens of any other repository are rejected at the pool.

    With the numeric id the trust survives a rename and refuses a new repository that takes the old name.
    """
    if repository_id:
        return f"assertion.repository_id == '{repository_id}'"
    return f"assertion.repository == '{repository}'"


def repository_principal_set(pool_name: str, repository: str, repository_id: str | None) -> str:
    """Every workflow run of the repository (any ref, any event that receives a token)."""
    if repository_id:
        return f"principalSet://iam.googleapis.com/{pool_name}/attribute.repository_id/{repository_id}"
    return f"principalSet://iam.googleapis.com/{pool_name}/attribute.repository/{repository}"


def environment_principal_set(pool_name: str, environment: str) -> str:
    """Only jobs that run in the GitHub environment; the pool's condition already pins the repository."""
    return f"principalSet://iam.googleapis.com/{pool_name}/attribute.environment/{environment}"


@dataclass
class GitHubFederationArgs:
    project: str
    pool_id: str
    provider_id: str
    repository: str
    repository_id: str | None


class GitHubFederation(pulumi.ComponentResource):
    """The pool and its one provider (GitHub Actions OIDC), restricted to one repository."""

    pool_name: pulumi.Output[str]
    provider_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: GitHubFederationArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("vertex-training:bootstrap:GitHubFederation", name, None, opts)
        pool = gcp.iam.WorkloadIdentityPool(
            f"{name}-pool",
            project=args.project,
            workload_identity_pool_id=args.pool_id,
            display_name="GitHub Actions",
            description=f"GitHub Actions runs of {args.repository}",
            opts=pulumi.ResourceOptions(parent=self),
        )
        provider = gcp.iam.WorkloadIdentityPoolProvider(
            f"{name}-provider",
            project=args.project,
            workload_identity_pool_id=pool.workload_identity_pool_id,
            workload_identity_pool_provider_id=args.provider_id,
            display_name="GitHub OIDC",
            description=f"Tokens issued by GitHub Actions for {args.repository} only",
            attribute_mapping=ATTRIBUTE_MAPPING,
            attribute_condition=attribute_condition(args.repository, args.repository_id),
            oidc=gcp.iam.WorkloadIdentityPoolProviderOidcArgs(issuer_uri=GITHUB_ISSUER),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.provider = provider
        # Full resource names ("projects/<number>/locations/global/workloadIdentityPools/<pool>", and
        # ".../providers/<id>"): the forms IAM principals and google-github-actions/auth expect.
        self.pool_name = pool.name
        self.provider_name = provider.name
        self.register_outputs({"pool_name": self.pool_name, "provider_name": self.provider_name})
