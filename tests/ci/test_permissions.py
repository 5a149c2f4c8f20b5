"""The CI identities hold every permission the calls of `pulumi preview --refresh` / `pulumi up` make.

Each call lists the permissions Google's API reference names for it; tests/iam_facts.py holds what each
granted role contains. A role change that drops a needed permission, or a new call, fails here.
"""

from __future__ import annotations

import pytest

from infra.bootstrap import roles
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
DEPLOY_CALLS: dict[str, set[str]] = {
    "create the budget (billing project override)": {"billing.budgets.create", "serviceusage.services.use"},
    "enable the APIs": {"serviceusage.services.enable"},
    "create the bucket": {"storage.buckets.create"},
    "create the service accounts": {"iam.serviceAccounts.create"},
    "grant project roles": {"resourcemanager.projects.setIamPolicy"},
    "create the budget topic": {"pubsub.topics.create"},
    "deploy the function with its build identity": {
        "cloudfunctions.functions.create",
        "iam.serviceAccounts.actAs",
    },
    "submit a CustomJob as the job identity": {"aiplatform.customJobs.create", "iam.serviceAccounts.actAs"},
    "read the GPU quota before submitting": {"cloudquotas.quotas.get"},
    "cancel and delete CustomJobs on destroy": {
        "aiplatform.customJobs.cancel",
        "aiplatform.customJobs.delete",
    },
    # REST reference of models.upload / deleteVersion / delete (read 2026-11-22).
    "register the model version, read by the job identity": {
        "aiplatform.models.upload",
        "aiplatform.models.list",
        "iam.serviceAccounts.actAs",
    },
    "delete the model version on destroy": {"aiplatform.models.delete"},
    # REST reference of models.mergeVersionAliases: "aiplatform.models.update" (read 2026-11-22).
    "move the version aliases": {"aiplatform.models.update"},
    # REST reference of hyperparameterTuningJobs.create / list / get / cancel / delete (read 2026-11-22):
    # create, adopt by key label after an interrupted up, poll, cancel and delete on destroy.
    "run the tuning job": {
        "aiplatform.hyperparameterTuningJobs.create",
        "aiplatform.hyperparameterTuningJobs.list",
        "aiplatform.hyperparameterTuningJobs.get",
        "aiplatform.hyperparameterTuningJobs.cancel",
        "aiplatform.hyperparameterTuningJobs.delete",
    },
    # REST reference of metadataStores.get/create and contexts.get/create/patch/addContextChildren (read
    # 2026-11-25): the stack's experiment and a run per training job (infra/vertex/experiments.py).
    "link the training job to its experiment run": {
        "aiplatform.metadataStores.get",
        "aiplatform.metadataStores.create",
        "aiplatform.contexts.get",
        "aiplatform.contexts.create",
        "aiplatform.contexts.addContextChildren",
        "aiplatform.contexts.update",
    },
    "generate the service agents": {"serviceusage.services.generateServiceIdentity"},
    "let the Pub/Sub agent mint tokens for the trigger account": {"iam.serviceAccounts.setIamPolicy"},
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
