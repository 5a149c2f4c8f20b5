"""The CI identities hold every permission the calls of `pulumi preview --refresh` / `pulumi up` make.

Each call lists the permissions Google's API reference names for it; tests/iam_facts.py holds what each
granted role contains. A role change that drops a needed permission, or a new call, fails here.
"""

from __future__ import annotations

import pytest

from infra.bootstrap import roles, stack_accounts
from infra.bootstrap.stack_accounts import GUARD_ACCOUNT, stack_account_ids
from infra.least_privilege import custom_roles
from infra.preflight import permissions as up
from tests.iam_facts import permissions

# The budget is read and written through a provider with user_project_override: Google checks
# serviceusage.services.use on the billing project for every such call.
PREVIEW_CALLS: dict[str, set[str]] = {
    "refresh the budget (billing project override)": {"billing.budgets.get", "serviceusage.services.use"},
    "look up the project number": {"resourcemanager.projects.get"},
    "refresh the enabled APIs": {"serviceusage.services.get"},
    "refresh the bucket": {"storage.buckets.get"},
    "refresh the budget topic": {"pubsub.topics.get"},
    "refresh the service accounts": {"iam.serviceAccounts.get"},
    "refresh the kill-switch function": {"cloudfunctions.functions.get"},
    "refresh the CustomJobs": {"aiplatform.customJobs.get"},
    # The preview's cost lines: the Catalog API call is billed to the project named as quota project.
    "list Vertex AI prices (Cloud Billing Catalog)": {"serviceusage.services.use"},
    "refresh the model version": {"aiplatform.models.get"},
    "refresh the tuning job": {"aiplatform.hyperparameterTuningJobs.get"},
}
# What `pulumi up` calls need, on the project and on each of the stack's own accounts: the lists
# `python -m infra.preflight` tests the caller against.
DEPLOY_CALLS: dict[str, set[str]] = {what: set(call.permissions) for what, call in up.DEPLOY_CALLS.items()}
# What the deploy identity does to the stack's own accounts, checked on each one (roles.STACK_ACCOUNT_ROLES
# are granted there by the bootstrap, never on the project).
ACCOUNT_CALLS: dict[str, set[str]] = {what: set(call.permissions) for what, call in up.ACCOUNT_CALLS.items()}


@pytest.mark.parametrize(
    ("identity", "granted", "calls"),
    [
        ("preview", {**roles.PREVIEW_PROJECT_ROLES, **roles.PREVIEW_BILLING_ROLES}, PREVIEW_CALLS),
        ("deploy", {**roles.DEPLOY_PROJECT_ROLES, **roles.DEPLOY_BILLING_ROLES}, DEPLOY_CALLS),
    ],
)
def test_identity_holds_every_permission_its_calls_need(identity: str, granted: dict, calls: dict) -> None:
    held = permissions(granted)
    missing = {call: sorted(needed - held) for call, needed in calls.items() if not needed <= held}
    assert not missing, f"{identity} identity lacks {missing}"


def test_the_preview_identity_cannot_change_anything() -> None:
    writes = ("create", "update", "delete", "enable", "setIamPolicy", "actAs", "cancel")
    held = permissions({**roles.PREVIEW_PROJECT_ROLES, **roles.PREVIEW_BILLING_ROLES})
    assert not [p for p in held if p.rsplit(".", 1)[-1] in writes]


def _on_account(purpose: str) -> set[str]:
    """What the deploy identity holds on the account for `purpose` (custom roles from their definition)."""
    custom = {role.role_id: set(role.permissions) for role in custom_roles.ALL}
    return set().union(*(custom.get(r) or permissions({r}) for r in stack_accounts.account_roles(purpose)))


def test_the_deploy_identity_holds_on_its_stacks_accounts_what_it_does_there() -> None:
    for purpose, needed in up.needed_on_accounts(frozenset(up.ACCOUNT_WHEN.values())).items():
        assert needed <= _on_account(purpose), f"{purpose}: lacks {sorted(needed - _on_account(purpose))}"
    project = permissions({**roles.DEPLOY_PROJECT_ROLES, **roles.DEPLOY_BILLING_ROLES})
    assert not project & set().union(*ACCOUNT_CALLS.values()), "none of it on the project"


def test_each_permission_up_needs_names_a_documented_role_that_holds_it() -> None:
    """Project and billing permissions: a deploy role of that scope; account permissions: a role the
    bootstrap grants on each of the stack's accounts (never a project role)."""
    scopes = {
        "project": (
            set().union(*DEPLOY_CALLS.values()),
            {**roles.DEPLOY_PROJECT_ROLES, **roles.DEPLOY_BILLING_ROLES},
        ),
        "account": (
            set().union(*ACCOUNT_CALLS.values()),
            {**roles.STACK_ACCOUNT_ROLES, **roles.GUARD_ACCOUNT_ROLES},
        ),
    }
    assert set().union(*(needed for needed, _ in scopes.values())) == set(up.GRANTED_BY)
    documented_extra = {roles.STACK_ACCOUNT_ROLE_ID: set(custom_roles.STACK_ACCOUNT.permissions)}
    for scope, (needed, documented) in scopes.items():
        for permission in needed:
            role = up.GRANTED_BY[permission]
            assert role in documented, (
                f"{permission}: {role} is no deploy role infra/bootstrap/roles.py grants on the {scope}"
            )
            held = documented_extra.get(role) or permissions({role})
            assert permission in held, f"{role} does not hold {permission}"


def test_budget_rights_are_checked_on_the_billing_account() -> None:
    assert permissions({**roles.DEPLOY_BILLING_ROLES}) >= up.BILLING_PERMISSIONS
    assert not permissions({**roles.DEPLOY_PROJECT_ROLES}) & up.BILLING_PERMISSIONS


def test_the_accounts_preflight_checks_are_the_ones_the_bootstrap_creates() -> None:
    assert set(up.ACCOUNT_WHEN) == set(stack_account_ids("dev"))
    assert set().union(*(call.accounts for call in up.ACCOUNT_CALLS.values())) == set(up.ACCOUNT_WHEN)


def test_only_the_guard_account_gets_account_admin() -> None:
    """serviceAccountAdmin holds setIamPolicy and serviceAccountApiKeyBindings.create: only where the stack
    changes the account's IAM policy (the guard's), never on the job, builder or guard-build accounts."""
    for purpose in up.ACCOUNT_WHEN:
        held = _on_account(purpose)
        assert ("iam.serviceAccounts.setIamPolicy" in held) == (purpose == GUARD_ACCOUNT), purpose
        assert ("roles/iam.serviceAccountAdmin" in stack_accounts.account_roles(purpose)) == (
            purpose == GUARD_ACCOUNT
        )


def test_the_deploy_identity_holds_what_preflight_reads_with() -> None:
    """Preflight run as vt-ci-deploy can tell: it holds every permission preflight reads with."""
    deploy = {**roles.DEPLOY_PROJECT_ROLES, **roles.DEPLOY_BILLING_ROLES}
    for permission, role in up.PREFLIGHT_READS.items():
        assert role in deploy, f"{permission}: {role} is no deploy role"
        assert permission in permissions({role}), f"{role} does not hold {permission}"
