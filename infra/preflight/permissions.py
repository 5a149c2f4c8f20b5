"""What each Google Cloud call of `pulumi up` / `destroy` needs, and the documented role that grants it.

The single list that `python -m infra.preflight` tests the caller against (testIamPermissions), that
tests/ci/test_permissions.py checks the CI deploy identity against, and that docs/stack.md points to. The
roles are the `vt-ci-deploy` roles of infra/bootstrap/roles.py (docs/ci.md's table, docs/stack.md step 4);
tests/iam_facts.py holds which permissions Google's IAM reference lists in each.
"""

from __future__ import annotations

from dataclasses import dataclass

# When a call happens: every cloud stack, or only with one stack setting (infra/preflight/run.py settings).
ALWAYS = "always"
KILL_SWITCH = "killSwitch"
TUNING = "tuning"
MODEL_REGISTRY = "registerModel"
CLOUD_BUILD = "imageBuilder: cloudbuild"
BUDGET = "budget"


@dataclass(frozen=True)
class Call:
    """One kind of call `up` makes: the permissions Google's API reference names for it, and when."""

    permissions: frozenset[str]
    when: str = ALWAYS


def _call(*permissions: str, when: str = ALWAYS) -> Call:
    return Call(frozenset(permissions), when)


DEPLOY_CALLS: dict[str, Call] = {
    # The budget is created through a provider with user_project_override: Google checks
    # serviceusage.services.use on the billing project for every such call.
    "create the budget (billing project override)": _call(
        "billing.budgets.create", "serviceusage.services.use", when=BUDGET
    ),
    "enable the APIs": _call("serviceusage.services.enable"),
    "create the bucket": _call("storage.buckets.create"),
    "create the Docker repository": _call("artifactregistry.repositories.create"),
    "create the service accounts": _call("iam.serviceAccounts.create"),
    "grant project roles": _call("resourcemanager.projects.setIamPolicy"),
    "create the budget topic": _call("pubsub.topics.create", when=BUDGET),
    "create the budget's e-mail channels": _call("monitoring.notificationChannels.create", when=BUDGET),
    "build the trainer image in Cloud Build as its builder account": _call(
        "cloudbuild.builds.create", "iam.serviceAccounts.actAs", when=CLOUD_BUILD
    ),
    "deploy the function with its build identity": _call(
        "cloudfunctions.functions.create", "iam.serviceAccounts.actAs", when=KILL_SWITCH
    ),
    "let the trigger's identity invoke the function": _call("run.services.setIamPolicy", when=KILL_SWITCH),
    "generate the service agents": _call("serviceusage.services.generateServiceIdentity", when=KILL_SWITCH),
    "let the Pub/Sub agent mint tokens for the trigger account": _call(
        "iam.serviceAccounts.setIamPolicy", when=KILL_SWITCH
    ),
    "submit a CustomJob as the job identity": _call(
        "aiplatform.customJobs.create", "iam.serviceAccounts.actAs"
    ),
    "read the GPU quota before submitting": _call("cloudquotas.quotas.get"),
    "cancel and delete CustomJobs on destroy": _call(
        "aiplatform.customJobs.cancel", "aiplatform.customJobs.delete"
    ),
    # REST reference of models.upload / deleteVersion / delete (read 2026-11-22).
    "register the model version, read by the job identity": _call(
        "aiplatform.models.upload", "aiplatform.models.list", "iam.serviceAccounts.actAs", when=MODEL_REGISTRY
    ),
    "delete the model version on destroy": _call("aiplatform.models.delete", when=MODEL_REGISTRY),
    # REST reference of models.mergeVersionAliases: "aiplatform.models.update" (read 2026-11-22).
    "move the version aliases": _call("aiplatform.models.update", when=MODEL_REGISTRY),
    # REST reference of hyperparameterTuningJobs.create / list / get / cancel / delete (read 2026-11-22):
    # create, adopt by key label after an interrupted up, poll, cancel and delete on destroy.
    "run the tuning job": _call(
        "aiplatform.hyperparameterTuningJobs.create",
        "aiplatform.hyperparameterTuningJobs.list",
        "aiplatform.hyperparameterTuningJobs.get",
        "aiplatform.hyperparameterTuningJobs.cancel",
        "aiplatform.hyperparameterTuningJobs.delete",
        when=TUNING,
    ),
}

# Checked on the billing account (billingAccounts.testIamPermissions); every other permission on the project.
BILLING_PERMISSIONS = frozenset({"billing.budgets.create"})

# The documented role that grants each permission (infra/bootstrap/roles.py DEPLOY_*_ROLES; the custom role
# of the bootstrap for the one no narrow predefined role holds). tests/ci/test_permissions.py checks each
# against Google's role contents.
GRANTED_BY: dict[str, str] = {
    "billing.budgets.create": "roles/billing.costsManager",
    "serviceusage.services.use": "roles/serviceusage.serviceUsageAdmin",
    "serviceusage.services.enable": "roles/serviceusage.serviceUsageAdmin",
    "cloudquotas.quotas.get": "roles/serviceusage.serviceUsageAdmin",
    "storage.buckets.create": "roles/storage.admin",
    "artifactregistry.repositories.create": "roles/artifactregistry.admin",
    "iam.serviceAccounts.create": "roles/iam.serviceAccountAdmin",
    "iam.serviceAccounts.setIamPolicy": "roles/iam.serviceAccountAdmin",
    "iam.serviceAccounts.actAs": "roles/iam.serviceAccountUser",
    "resourcemanager.projects.setIamPolicy": "roles/resourcemanager.projectIamAdmin",
    "pubsub.topics.create": "roles/pubsub.admin",
    "monitoring.notificationChannels.create": "roles/monitoring.notificationChannelEditor",
    "cloudbuild.builds.create": "roles/cloudbuild.builds.editor",
    "cloudfunctions.functions.create": "roles/cloudfunctions.developer",
    "run.services.setIamPolicy": "roles/run.admin",
    "serviceusage.services.generateServiceIdentity": "vertexTrainingDeploy",
    "aiplatform.customJobs.create": "roles/aiplatform.user",
    "aiplatform.customJobs.cancel": "roles/aiplatform.user",
    "aiplatform.customJobs.delete": "roles/aiplatform.user",
    "aiplatform.models.upload": "roles/aiplatform.user",
    "aiplatform.models.list": "roles/aiplatform.user",
    "aiplatform.models.delete": "roles/aiplatform.user",
    "aiplatform.models.update": "roles/aiplatform.user",
    "aiplatform.hyperparameterTuningJobs.create": "roles/aiplatform.user",
    "aiplatform.hyperparameterTuningJobs.list": "roles/aiplatform.user",
    "aiplatform.hyperparameterTuningJobs.get": "roles/aiplatform.user",
    "aiplatform.hyperparameterTuningJobs.cancel": "roles/aiplatform.user",
    "aiplatform.hyperparameterTuningJobs.delete": "roles/aiplatform.user",
}


def needed(settings: frozenset[str]) -> set[str]:
    """Every permission of the calls that happen with these settings (ALWAYS plus those in `settings`)."""
    return set().union(*(c.permissions for c in DEPLOY_CALLS.values() if c.when in settings | {ALWAYS}))
