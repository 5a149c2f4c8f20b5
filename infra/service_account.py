"""A component holding one keyless service account and the IAM grants that give it its rights."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from infra.options import children


class ServiceAccountIdentity(pulumi.ComponentResource):
    """`grants` lists every IAM member resource: what runs as the account waits for them, so it starts with
    its rights. Subclasses add their grants to `member`, then register `email` as their output."""

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
        self.account = gcp.serviceaccount.Account(
            account_name,
            project=project,
            account_id=account_id,
            display_name=display_name,
            description=description,
            opts=children(self, opts),
        )
        self.email = self.account.email
        self.member = self.account.email.apply(lambda email: f"serviceAccount:{email}")
        self.grants: list[pulumi.Resource] = []
