"""A component holding one keyless service account and the IAM grants that give it its rights."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_gcp as gcp

from infra.components.options import children


class ServiceAccountIdentity(pulumi.ComponentResource):
    """`grants` lists every IAM member resource: what runs as the account waits for them, so it starts with
    its rights. Subclasses add grants with the grant_* methods, then register `email` as their output."""

    def __init__(
        self,
        type_: str,
        name: str,
        *,
        account_name: str,
        project: str,
        account_id: str,
        display_name: str,
        description: str,
        opts: pulumi.ResourceOptions | None,
    ) -> None:
        super().__init__(type_, name, None, opts)
        self._child_opts = children(self, opts)
        self.account = gcp.serviceaccount.Account(
            account_name,
            project=project,
            account_id=account_id,
            display_name=display_name,
            description=description,
            # The bootstrap creates a CI-deployed stack's accounts first, to grant the deploy identity act-as
            # on each of them (never on the project): the stack then adopts the existing account.
            create_ignore_already_exists=True,
            opts=self._child_opts,
        )
        self.email = self.account.email
        self.member = self.account.email.apply(lambda email: f"serviceAccount:{email}")
        self.grants: list[pulumi.Resource] = []

    def grant_project(self, resource_name: str, project: str, role: str) -> None:
        self._grant(gcp.projects.IAMMember, resource_name, project=project, role=role)

    def grant_repository(
        self, resource_name: str, *, project: str, region: str, repository: pulumi.Input[str], role: str
    ) -> None:
        self._grant(
            gcp.artifactregistry.RepositoryIamMember,
            resource_name,
            project=project,
            location=region,
            repository=repository,
            role=role,
        )

    def grant_bucket(
        self,
        resource_name: str,
        bucket: pulumi.Input[str],
        role: str,
        condition: pulumi.Input[dict[str, str]] | None = None,
    ) -> None:
        self._grant(gcp.storage.BucketIAMMember, resource_name, bucket=bucket, role=role, condition=condition)

    def _grant(
        self, member_type: Callable[..., pulumi.CustomResource], resource_name: str, **scope: Any
    ) -> None:
        """An IAM member resource of `member_type` giving this account a role on `scope`, as a child."""
        self.grants.append(member_type(resource_name, member=self.member, opts=self._child_opts, **scope))
