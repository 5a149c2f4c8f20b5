"""A CI service account: its roles, who may impersonate it, and its access to Pulumi state and secrets."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp


@dataclass
class CiIdentityArgs:
    project: str
    account_id: str
    description: str
    principal: pulumi.Input[str]  # the federated principal(s) allowed to impersonate it
    project_roles: list[str]
    billing_account: str
    billing_roles: list[str]
    state_bucket: pulumi.Input[str]
    state_bucket_role: str
    secrets_key: pulumi.Input[str]
    secrets_key_role: str
    # role -> (title, CEL expression): grants that only hold under a condition
    conditions: dict[str, tuple[str, str]] = field(default_factory=dict)


class CiIdentity(pulumi.ComponentResource):
    """No keys are ever created: the account is only reachable through Workload Identity Federation."""

    email: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        args: CiIdentityArgs,
        federation: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:bootstrap:CiIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            project=args.project,
            account_id=args.account_id,
            display_name=f"CI {name}",
            description=args.description,
            opts=child,
        )
        gcp.serviceaccount.IAMMember(
            f"{name}-federated",
            service_account_id=account.name,
            role="roles/iam.workloadIdentityUser",
            member=args.principal,
            # The principal names the pool; it must exist before IAM accepts it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[federation]),
        )
        for role in args.project_roles:
            condition = args.conditions.get(role)
            gcp.projects.IAMMember(
                f"{name}-{_slug(role)}",
                project=args.project,
                role=role,
                member=account.member,
                condition=gcp.projects.IAMMemberConditionArgs(title=condition[0], expression=condition[1])
                if condition
                else None,
                opts=child,
            )
        for role in args.billing_roles:
            gcp.billing.AccountIamMember(
                f"{name}-billing-{_slug(role)}",
                billing_account_id=args.billing_account,
                role=role,
                member=account.member,
                opts=child,
            )
        gcp.storage.BucketIAMMember(
            f"{name}-state",
            bucket=args.state_bucket,
            role=args.state_bucket_role,
            member=account.member,
            opts=child,
        )
        gcp.kms.CryptoKeyIAMMember(
            f"{name}-secrets",
            crypto_key_id=args.secrets_key,
            role=args.secrets_key_role,
            member=account.member,
            opts=child,
        )
        self.email = account.email
        self.register_outputs({"email": self.email})


def _slug(role: str) -> str:
    return role.rsplit("/", 1)[-1].replace(".", "-").lower()
