"""The deploy stack's service accounts, created here so the deploy identity can act as each one, not all.

Act-as and account admin can only be limited to some accounts by granting them on each account: IAM
Conditions recognise resource names for a fixed list of services, and IAM is not one of them
(https://cloud.google.com/iam/docs/conditions-attribute-reference, read 2026-11-25), and an account must exist
before a role can be granted on it. So the owner who runs the bootstrap creates the accounts the deploy stack
runs workloads as, with the deploy identity's roles on each; the stack then adopts them
(create_ignore_already_exists) and the deploy identity needs only iam.serviceAccounts.create on the project.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_gcp as gcp

from infra.bootstrap.roles import GUARD_ACCOUNT_ROLES, STACK_ACCOUNT_ROLES
from infra.cloudbuild import identity as builder
from infra.components import identity, killswitch

MAIN_PROJECT = "vertex-training"  # the main Pulumi project's name (Pulumi.yaml): it names the guard accounts

# What each of a stack's accounts is for (infra/preflight/permissions.py says which calls need which).
JOB_ACCOUNT = "training jobs and trials"
BUILDER_ACCOUNT = "trainer image builds"
GUARD_ACCOUNT = "budget kill switch"
GUARD_BUILD_ACCOUNT = "kill-switch builds"


def stack_account_ids(stack: str) -> dict[str, str]:
    """What each account of `stack` is for -> its account id (the ids the main stack's components use)."""
    guard = killswitch.guard_names(MAIN_PROJECT, stack)
    return {
        JOB_ACCOUNT: identity.account_id(stack),
        BUILDER_ACCOUNT: builder.account_id(stack),
        GUARD_ACCOUNT: guard.account_id,
        GUARD_BUILD_ACCOUNT: guard.build_account_id,
    }


def account_roles(purpose: str) -> tuple[str, ...]:
    """The deploy identity's roles on the account for `purpose` (custom roles by role id)."""
    return (*STACK_ACCOUNT_ROLES, *(GUARD_ACCOUNT_ROLES if purpose == GUARD_ACCOUNT else ()))


def stack_accounts(
    project: str,
    stack: str,
    deployer: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    custom_role_names: Mapping[str, pulumi.Input[str]],
) -> list[gcp.serviceaccount.Account]:
    """Create the accounts and grant `deployer` (a member) account_roles on each of them."""
    accounts = []
    for purpose, account_id in stack_account_ids(stack).items():
        account = gcp.serviceaccount.Account(
            f"stack-{account_id}",
            project=project,
            account_id=account_id,
            display_name=f"vertex-training {stack}: {purpose}",
            description=f"Created by the bootstrap for stack {stack}; its grants come with the stack.",
            # The stack sets its own display name and description when it adopts the account: never undo them.
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(ignore_changes=["displayName", "description"])
            ),
        )
        for role in account_roles(purpose):
            gcp.serviceaccount.IAMMember(
                f"stack-{account_id}-{role.rsplit('.', 1)[-1].lower()}",
                service_account_id=account.name,
                role=custom_role_names.get(role, role),
                member=deployer,
                opts=opts,
            )
        accounts.append(account)
    return accounts
