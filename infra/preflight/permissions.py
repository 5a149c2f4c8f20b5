"""What each Google Cloud call of `pulumi up` / `destroy` needs, where Google checks it, and the documented
role that grants it.

The single list that `python -m infra.preflight` tests the caller against (testIamPermissions on the project,
the billing account and each of the stack's own service accounts), that tests/ci/test_permissions.py checks
the CI deploy identity against, and that docs/stack.md points to. The roles are the `vt-ci-deploy` roles of
infra/bootstrap/roles.py: DEPLOY_PROJECT_ROLES and DEPLOY_BILLING_ROLES where they are granted, and
STACK_ACCOUNT_ROLES (GUARD_ACCOUNT_ROLES on the guard's), granted on each of the stack's accounts only, never
on the project (issue 27: act-as on the project reaches every account in it). tests/iam_facts.py holds which
permissions Google's IAM reference lists in each role.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.bootstrap.stack_accounts import (
    BUILDER_ACCOUNT,
    GUARD_ACCOUNT,
    GUARD_BUILD_ACCOUNT,
    JOB_ACCOUNT,
)
from infra.least_privilege.custom_roles import STACK_ACCOUNT
from infra.vertex import kinds

# When a call happens: every cloud stack, or only with one stack setting (infra/preflight/run.py settings).
ALWAYS = "always"
KILL_SWITCH = "killSwitch"
TUNING = "tuning"
MODEL_REGISTRY = "registerModel"
CLOUD_BUILD = "imageBuilder: cloudbuild"
BUDGET = "budget"
EXPERIMENT = "experiment"
TENSORBOARD = "tensorboard"
BATCH_PREDICTION = "batchPrediction"
ENDPOINT = "endpoint"
# What the deployment and the native endpoint call (roles/aiplatform.user holds each: iam-dataset
# gcp/roles/aiplatform.user.json at 02b6c7c8, read 2026-11-29): create, read and delete the endpoint; deploy,
# read and undeploy the model on it.
ENDPOINT_PERMISSIONS = (
    "aiplatform.endpoints.create",
    "aiplatform.endpoints.get",
    "aiplatform.endpoints.deploy",
    "aiplatform.endpoints.undeploy",
    "aiplatform.endpoints.delete",
)


@dataclass(frozen=True)
class Call:
    """One kind of call `up` makes on the project: the permissions Google's API reference names, and when."""

    permissions: frozenset[str]
    when: str = ALWAYS


@dataclass(frozen=True)
class AccountCall:
    """One kind of call `up` makes on some of the stack's own accounts (ACCOUNT_WHEN keys): Google checks
    these permissions on each of those accounts."""

    permissions: frozenset[str]
    accounts: frozenset[str]


def _call(*permissions: str, when: str = ALWAYS) -> Call:
    return Call(frozenset(permissions), when)


def _on(accounts: tuple[str, ...], *permissions: str) -> AccountCall:
    return AccountCall(frozenset(permissions), frozenset(accounts))


DEPLOY_CALLS: dict[str, Call] = {
    # The budget is created through a provider with user_project_override: Google checks
    # serviceusage.services.use on the billing project for every such call.
    "create the budget (billing project override)": _call(
        "billing.budgets.create", "serviceusage.services.use", when=BUDGET
    ),
    "enable the APIs": _call("serviceusage.services.enable"),
    "create the bucket and grant its roles": _call("storage.buckets.create", "storage.buckets.setIamPolicy"),
    "create the Docker repository and grant its roles": _call(
        "artifactregistry.repositories.create", "artifactregistry.repositories.setIamPolicy"
    ),
    # Creating an account is checked on the project (the account does not exist yet); so is reading it back.
    "create the service accounts (and read them back)": _call(
        "iam.serviceAccounts.create", "iam.serviceAccounts.get"
    ),
    "grant project roles": _call("resourcemanager.projects.setIamPolicy"),
    "create the budget topic and let Cloud Billing publish to it": _call(
        "pubsub.topics.create", "pubsub.topics.setIamPolicy", when=BUDGET
    ),
    "create the budget's e-mail channels": _call("monitoring.notificationChannels.create", when=BUDGET),
    # Upload the build context (objects.insert: storage.objects.create).
    "upload the trainer image's build context": _call("storage.objects.create", when=CLOUD_BUILD),
    # REST reference of projects.builds.create / get / list (read 2026-11-25): start, poll, adopt by tag.
    "build the trainer image in Cloud Build": _call(
        "cloudbuild.builds.create", "cloudbuild.builds.get", "cloudbuild.builds.list", when=CLOUD_BUILD
    ),
    # entries.list (read 2026-11-25): the end of a failed build's log.
    "show a failed build's log": _call("logging.logEntries.list", when=CLOUD_BUILD),
    "upload the kill switch's source": _call("storage.objects.create", when=KILL_SWITCH),
    "deploy the function": _call("cloudfunctions.functions.create", when=KILL_SWITCH),
    "let the trigger's identity invoke the function": _call("run.services.setIamPolicy", when=KILL_SWITCH),
    # Generating the service agents (services.generateServiceIdentity) is not listed: IAM checks no
    # permission for it, and testIamPermissions answers a permission it does not know with an error
    # (googleapis/google-cloud-java#722), which would leave this whole line unanswered.
    # REST reference of customJobs.create / list / get (read 2026-11-25): submit, adopt by key label after
    # an interrupted up, poll.
    "submit a CustomJob": _call(
        "aiplatform.customJobs.create", "aiplatform.customJobs.list", "aiplatform.customJobs.get"
    ),
    "create the TensorBoard": _call("aiplatform.tensorboards.create", when=TENSORBOARD),
    "read the GPU quota before submitting": _call("cloudquotas.quotas.get"),
    "cancel and delete CustomJobs on destroy": _call(
        "aiplatform.customJobs.cancel", "aiplatform.customJobs.delete"
    ),
    # REST reference of models.upload / deleteVersion / delete (read 2026-11-22).
    "register the model version": _call(
        "aiplatform.models.upload", "aiplatform.models.list", when=MODEL_REGISTRY
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
    # REST reference of batchPredictionJobs.create / list / get / cancel / delete, "IAM Permissions" (read
    # 2026-11-26): the job kind's lifecycle verbs, from the one table of job kinds (infra/vertex/kinds.py).
    "run the batch prediction": _call(*kinds.permissions(kinds.BATCH_PREDICTION_JOB), when=BATCH_PREDICTION),
    "create the endpoint, deploy the model version, undeploy it on destroy": _call(
        *ENDPOINT_PERMISSIONS, when=ENDPOINT
    ),
    # REST reference of metadataStores.get/create and contexts.get/create/patch/addContextChildren (read
    # 2026-11-25): the stack's experiment and a run per training job (infra/vertex/custom_job/experiments.py).
    "link the training job to its experiment run": _call(
        "aiplatform.metadataStores.get",
        "aiplatform.metadataStores.create",
        "aiplatform.contexts.get",
        "aiplatform.contexts.create",
        "aiplatform.contexts.addContextChildren",
        "aiplatform.contexts.update",
        when=EXPERIMENT,
    ),
}

# Checked on the billing account (billingAccounts.testIamPermissions); every other permission on the project.
BILLING_PERMISSIONS = frozenset({"billing.budgets.create"})

# Which of the stack's own accounts (infra/bootstrap/stack_accounts.py) a stack has: with which setting.
ACCOUNT_WHEN: dict[str, str] = {
    JOB_ACCOUNT: ALWAYS,
    BUILDER_ACCOUNT: CLOUD_BUILD,
    GUARD_ACCOUNT: KILL_SWITCH,
    GUARD_BUILD_ACCOUNT: KILL_SWITCH,
}

# Act-as is what attaching an account to a job, build or function takes, checked on that account
# (https://cloud.google.com/iam/docs/service-account-permissions, read 2026-11-25); setIamPolicy, update and
# delete are checked on the account they change.
ACCOUNT_CALLS: dict[str, AccountCall] = {
    "run jobs, trials and the model upload as the job account": _on(
        (JOB_ACCOUNT,), "iam.serviceAccounts.actAs"
    ),
    "run the trainer image's Cloud Build builds as the builder account": _on(
        (BUILDER_ACCOUNT,), "iam.serviceAccounts.actAs"
    ),
    "run the function and its trigger as the guard account, its build as the guard's build account": _on(
        (GUARD_ACCOUNT, GUARD_BUILD_ACCOUNT), "iam.serviceAccounts.actAs"
    ),
    "let the Pub/Sub agent mint tokens for the trigger account": _on(
        (GUARD_ACCOUNT,), "iam.serviceAccounts.setIamPolicy"
    ),
    "update and delete the accounts with the stack": _on(
        tuple(ACCOUNT_WHEN), "iam.serviceAccounts.update", "iam.serviceAccounts.delete"
    ),
}

# The documented role that grants each permission (infra/bootstrap/roles.py DEPLOY_*_ROLES where they are
# granted; STACK_ACCOUNT_ROLES on each of the stack's accounts for ACCOUNT_CALLS).
# tests/ci/test_permissions.py checks each against Google's role contents, and
# tests/ci/test_known_permissions.py that Google's role data knows every permission named here.
GRANTED_BY: dict[str, str] = {
    "billing.budgets.create": "roles/billing.costsManager",
    "serviceusage.services.use": "roles/serviceusage.serviceUsageAdmin",
    "serviceusage.services.enable": "roles/serviceusage.serviceUsageAdmin",
    "cloudquotas.quotas.get": "roles/serviceusage.serviceUsageAdmin",
    "storage.buckets.create": "roles/storage.admin",
    "storage.buckets.setIamPolicy": "roles/storage.admin",
    "storage.objects.create": "roles/storage.admin",
    "artifactregistry.repositories.create": "roles/artifactregistry.admin",
    "artifactregistry.repositories.setIamPolicy": "roles/artifactregistry.admin",
    "iam.serviceAccounts.create": "roles/iam.serviceAccountCreator",
    "iam.serviceAccounts.get": "roles/iam.serviceAccountCreator",
    # On each of the stack's accounts (STACK_ACCOUNT_ROLES; GUARD_ACCOUNT_ROLES on the guard's), never on
    # the project; update and delete through the bootstrap's custom role, not serviceAccountAdmin.
    "iam.serviceAccounts.actAs": "roles/iam.serviceAccountUser",
    "iam.serviceAccounts.setIamPolicy": "roles/iam.serviceAccountAdmin",  # on the guard account only
    "iam.serviceAccounts.update": STACK_ACCOUNT.role_id,
    "iam.serviceAccounts.delete": STACK_ACCOUNT.role_id,
    "resourcemanager.projects.setIamPolicy": "roles/resourcemanager.projectIamAdmin",
    "pubsub.topics.create": "roles/pubsub.admin",
    "pubsub.topics.setIamPolicy": "roles/pubsub.admin",
    "monitoring.notificationChannels.create": "roles/monitoring.notificationChannelEditor",
    "cloudbuild.builds.create": "roles/cloudbuild.builds.editor",
    "cloudbuild.builds.get": "roles/cloudbuild.builds.editor",
    "cloudbuild.builds.list": "roles/cloudbuild.builds.editor",
    "logging.logEntries.list": "roles/logging.viewer",
    "cloudfunctions.functions.create": "roles/cloudfunctions.developer",
    "run.services.setIamPolicy": "roles/run.admin",
    "aiplatform.customJobs.create": "roles/aiplatform.user",
    "aiplatform.customJobs.list": "roles/aiplatform.user",
    "aiplatform.customJobs.get": "roles/aiplatform.user",
    "aiplatform.tensorboards.create": "roles/aiplatform.user",
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
    **dict.fromkeys(kinds.permissions(kinds.BATCH_PREDICTION_JOB), "roles/aiplatform.user"),
    **dict.fromkeys(ENDPOINT_PERMISSIONS, "roles/aiplatform.user"),
    "aiplatform.metadataStores.get": "roles/aiplatform.user",
    "aiplatform.metadataStores.create": "roles/aiplatform.user",
    "aiplatform.contexts.get": "roles/aiplatform.user",
    "aiplatform.contexts.create": "roles/aiplatform.user",
    "aiplatform.contexts.addContextChildren": "roles/aiplatform.user",
    "aiplatform.contexts.update": "roles/aiplatform.user",
}


# What `python -m infra.preflight` itself reads with, besides `up`'s permissions (testIamPermissions needs
# none): the project and its billing info (resourcemanager.projects.get, per the Cloud Billing and Resource
# Manager references), the services' states (services.batchGet), the kill-switch role (roles.get). The
# deploy identity holds each through the role named (tests/ci/test_permissions.py), so preflight run as CI
# can tell.
PREFLIGHT_READS: dict[str, str] = {
    "resourcemanager.projects.get": "roles/iam.roleViewer",
    "serviceusage.services.get": "roles/serviceusage.serviceUsageAdmin",
    "iam.roles.get": "roles/iam.roleViewer",
}


def needed(settings: frozenset[str]) -> set[str]:
    """Every project (and billing) permission of the calls that happen with these settings (ALWAYS plus
    those in `settings`)."""
    return set().union(*(c.permissions for c in DEPLOY_CALLS.values() if c.when in settings | {ALWAYS}))


def needed_on_accounts(settings: frozenset[str]) -> dict[str, frozenset[str]]:
    """Each of the stack's accounts it has with these settings -> the permissions `up` needs on it."""
    return {
        account: frozenset().union(*(c.permissions for c in ACCOUNT_CALLS.values() if account in c.accounts))
        for account, when in ACCOUNT_WHEN.items()
        if when in settings | {ALWAYS}
    }
