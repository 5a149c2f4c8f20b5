"""The CI identities hold every permission the calls of `pulumi preview --refresh` / `pulumi up` make.

Each call lists the permissions Google's API reference names for it; tests/iam_facts.py holds what each
granted role contains. A role change that drops a needed permission, or a new call, fails here.
"""

from __future__ import annotations

import pytest

from infra.bootstrap import roles
from infra.preflight import permissions as permissions_of_up
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
# What `pulumi up` calls need: the list `python -m infra.preflight` tests the caller against.
DEPLOY_CALLS: dict[str, set[str]] = {
    what: set(call.permissions) for what, call in permissions_of_up.DEPLOY_CALLS.items()
}


@pytest.mark.parametrize(
    ("identity", "granted", "calls"),
    [
        ("preview", {**roles.PREVIEW_PROJECT_ROLES, **roles.PREVIEW_BILLING_ROLES}, PREVIEW_CALLS),
        ("deploy", {**roles.DEPLOY_PROJECT_ROLES, **roles.DEPLOY_BILLING_ROLES}, DEPLOY_CALLS),
    ],
)
def test_identity_holds_every_permission_its_calls_need(identity: str, granted: dict, calls: dict) -> None:
    # The deploy identity also holds the bootstrap's custom role of permissions no predefined role has.
    held = permissions(granted) | (set(roles.DEPLOY_EXTRA_PERMISSIONS) if identity == "deploy" else set())
    missing = {call: sorted(needed - held) for call, needed in calls.items() if not needed <= held}
    assert not missing, f"{identity} identity lacks {missing}"


def test_the_preview_identity_cannot_change_anything() -> None:
    writes = ("create", "update", "delete", "enable", "setIamPolicy", "actAs", "cancel")
    held = permissions({**roles.PREVIEW_PROJECT_ROLES, **roles.PREVIEW_BILLING_ROLES})
    assert not [p for p in held if p.rsplit(".", 1)[-1] in writes]


def test_each_permission_up_needs_names_a_documented_role_that_holds_it() -> None:
    documented = {**roles.DEPLOY_PROJECT_ROLES, **roles.DEPLOY_BILLING_ROLES, roles.DEPLOY_EXTRA_ROLE_ID: ""}
    needed = set().union(*DEPLOY_CALLS.values())
    assert needed == set(permissions_of_up.GRANTED_BY)
    for permission, role in permissions_of_up.GRANTED_BY.items():
        assert role in documented, f"{permission}: {role} is not a deploy role of infra/bootstrap/roles.py"
        held = (
            set(roles.DEPLOY_EXTRA_PERMISSIONS) if role == roles.DEPLOY_EXTRA_ROLE_ID else permissions({role})
        )
        assert permission in held, f"{role} does not hold {permission}"


def test_budget_rights_are_checked_on_the_billing_account() -> None:
    assert permissions({**roles.DEPLOY_BILLING_ROLES}) >= permissions_of_up.BILLING_PERMISSIONS
    assert not permissions({**roles.DEPLOY_PROJECT_ROLES}) & permissions_of_up.BILLING_PERMISSIONS
