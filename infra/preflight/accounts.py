"""The stack's own service accounts: each exists, and the caller holds on it what `pulumi up` does there.

Act-as and account admin are granted on each account, never on the project (infra/bootstrap/roles.py
STACK_ACCOUNT_ROLES), so they are tested on each account: IAM's serviceAccounts.get, then its
testIamPermissions, which answers the subset held there or inherited from the project. Names carry the project
id, not the `-` wildcard: with the wildcard Google answers a missing account with 403 instead of 404
(https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts/get, read 2026-11-25).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from google.api_core import exceptions as gexc
from google.cloud import iam_admin_v1

from infra.preflight.caller import Caller
from infra.preflight.clients import CALL_TIMEOUT_SECONDS
from infra.preflight.results import Result, cannot_tell, missing, ok

BOOTSTRAP = "cd infra/bootstrap && pulumi up"


@dataclass(frozen=True)
class StackAccount:
    """One of the stack's accounts: what it is for, its id, and permission -> role, what `up` needs on it."""

    purpose: str
    account_id: str
    needed: Mapping[str, str]

    def email(self, project: str) -> str:
        return f"{self.account_id}@{project}.iam.gserviceaccount.com"

    def name(self, project: str) -> str:
        return f"projects/{project}/serviceAccounts/{self.email(project)}"

    @property
    def item(self) -> str:
        return f"service account {self.account_id}"


def grant_on_account(email: str, member: str, role: str) -> str:
    """The command that grants `role` to `member` on the account `email` only (a custom role of the project
    by its full name: the account's project, from its e-mail)."""
    project = email.split("@", 1)[-1].removesuffix(".iam.gserviceaccount.com")
    qualified = role if role.startswith("roles/") else f"projects/{project}/roles/{role}"
    return f"gcloud iam service-accounts add-iam-policy-binding {email} --member={member} --role={qualified}"


def check(
    client: iam_admin_v1.IAMClient,
    project: str,
    stack: str,
    account: StackAccount,
    caller: Caller,
    held_on_project: Callable[[], set[str]],
) -> Result:
    """One line for `account`. `held_on_project()`: which of its permissions the caller holds on the project
    (asked only when the account does not exist yet: every account of the project inherits them)."""
    email, member = account.email(project), caller.member_or_placeholder
    try:
        found = client.get_service_account(name=account.name(project), timeout=CALL_TIMEOUT_SECONDS)
    except gexc.NotFound:
        return _not_created(project, stack, account, member, held_on_project())
    except gexc.PermissionDenied as exc:
        return cannot_tell(
            account.item,
            f"{account.purpose}: cannot read it ({exc.message}); reading it needs iam.serviceAccounts.get "
            "(roles/iam.serviceAccountViewer)",
            f"gcloud iam service-accounts describe {email}",
        )
    if found.disabled:
        return missing(
            account.item,
            f"{account.purpose}: {email} is disabled: nothing can run as it",
            f"gcloud iam service-accounts enable {email}",
        )
    response = client.test_iam_permissions(
        resource=account.name(project), permissions=sorted(account.needed), timeout=CALL_TIMEOUT_SECONDS
    )
    lacking = sorted(set(account.needed) - set(response.permissions))
    if not lacking:
        return ok(
            account.item,
            f"{account.purpose}: you hold all {len(account.needed)} that `pulumi up` needs on it",
        )
    roles = sorted({account.needed[permission] for permission in lacking})
    return missing(
        account.item,
        f"{account.purpose}: not held on it: {', '.join(lacking)}",
        "; ".join(grant_on_account(email, member, role) for role in roles),
    )


def _not_created(
    project: str, stack: str, account: StackAccount, member: str, on_project: set[str]
) -> Result:
    """An account `up` would create: fine if the caller's project rights reach it (Owner), else missing,
    because `up` grants the deployer nothing on the accounts it creates: its first act-as would fail."""
    lacking = sorted(set(account.needed) - on_project)
    if not lacking:
        return ok(
            account.item,
            f"{account.purpose}: not created yet; `up` creates it, and you hold what it needs there on the "
            "project, which every account in it inherits",
        )
    email = account.email(project)
    grants = "; ".join(grant_on_account(email, member, role) for role in sorted(set(account.needed.values())))
    return missing(
        account.item,
        f"{account.purpose}: {email} does not exist yet and your project roles do not reach it: `up` "
        f"would create it, then fail on {', '.join(lacking)} (the stack grants its deployer nothing on its "
        "accounts; these roles are granted on each account, never project-wide)",
        f"for the bootstrap's deployStack ({stack} here), an owner runs the bootstrap, which creates the "
        "stack's accounts and grants its deploy identity (vt-ci-deploy) act-as and admin on each: "
        f"{BOOTSTRAP}; deploying as yourself, an owner creates it and grants you on it instead: "
        f"gcloud iam service-accounts create {account.account_id} --project={project}; {grants}",
    )
