"""The roles each CI identity holds, and why: the single source for the stack and docs/ci.md."""

from __future__ import annotations

from infra.cloudbuild.resource import RESOURCE_TYPE as IMAGE_BUILD_TYPE
from infra.components.identity import PROJECT_ROLES
from infra.components.killswitch import BUILD_PROJECT_ROLE, BUILD_SOURCE_ROLE
from infra.least_privilege.custom_roles import KILL_SWITCH, STACK_ACCOUNT, TENSORBOARD_UPLOADER
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB_TYPE
from infra.vertex.model.resource import RESOURCE_TYPE as MODEL_VERSION_TYPE
from infra.vertex.tuning.resource import RESOURCE_TYPE as TUNING_JOB_TYPE

# Read-only: enough for `pulumi preview --refresh` of the main stack. Roles on the state bucket and the
# secrets key are granted on those resources, not here.
PREVIEW_PROJECT_ROLES: dict[str, str] = {
    "roles/browser": "look up the project (number, metadata) the stack reads",
    "roles/serviceusage.serviceUsageViewer": "refresh the enabled APIs",
    # The budget is read through a provider with user_project_override / billing_project: every such call
    # needs serviceusage.services.use on that project (https://cloud.google.com/service-usage/docs/access-control).
    "roles/serviceusage.serviceUsageConsumer": "bill the budget's refresh to the project",
    "roles/storage.bucketViewer": "refresh the training bucket's settings",
    "roles/storage.objectViewer": "refresh objects the stack uploads (the kill-switch source archive)",
    "roles/artifactregistry.reader": "refresh the repository and the pushed trainer image",
    "roles/iam.serviceAccountViewer": "refresh the stack's service accounts",
    "roles/iam.securityReviewer": "read IAM policies (project, bucket, repository, topic, service) and roles",
    "roles/pubsub.viewer": "refresh the budget topic",
    "roles/monitoring.viewer": "refresh the budget's e-mail notification channels",
    "roles/aiplatform.viewer": "refresh CustomJobs, model versions and the TensorBoard",
    "roles/cloudfunctions.viewer": "refresh the kill-switch function",
}
PREVIEW_BILLING_ROLES: dict[str, str] = {
    "roles/billing.viewer": "refresh the budget on the billing account",
}

# Everything `pulumi up` / `pulumi destroy` of the main stack does, and nothing project-wide beyond it.
DEPLOY_PROJECT_ROLES: dict[str, str] = {
    "roles/serviceusage.serviceUsageAdmin": (
        "enable the stack's APIs, bill Budgets API calls to the project, "
        "read GPU quotas (cloudquotas.quotas.get) before submitting a job"
    ),
    "roles/storage.admin": "create the training bucket and its IAM; upload the kill-switch source",
    "roles/artifactregistry.admin": "create the Docker repository, its cleanup policies and IAM; push images",
    # Creating an account is the one account operation checked on the project (the account does not exist
    # yet); everything else is granted on each of the stack's accounts (STACK_ACCOUNT_ROLES). IAM Conditions
    # cannot narrow a project grant to some accounts: resource names are recognised only for the services
    # listed in https://cloud.google.com/iam/docs/conditions-attribute-reference (read 2026-11-25), and IAM
    # is not one of them.
    "roles/iam.serviceAccountCreator": "create the stack's accounts (and read them back: get, list)",
    "roles/resourcemanager.projectIamAdmin": "grant the stack's identities project roles; only those listed",
    "roles/pubsub.admin": "create the budget topic and its IAM (Cloud Billing publishes to it)",
    "roles/monitoring.notificationChannelEditor": "create the budget's e-mail notification channels",
    "roles/cloudfunctions.developer": "deploy the kill-switch function with its Pub/Sub (Eventarc) trigger",
    "roles/run.admin": "grant the trigger's identity run.invoker on the function's Cloud Run service",
    "roles/aiplatform.user": "run and delete CustomJobs and model versions; create the TensorBoard",
    "roles/cloudbuild.builds.editor": "start, watch and adopt the trainer image's Cloud Build builds",
    "roles/logging.viewer": "show the end of a failed image build's log (builds log to Cloud Logging only)",
    # `python -m infra.preflight` run as this identity reads the kill-switch role (iam.roles.get); without it
    # that line says "cannot tell". Read-only: roles get/list, the project and its IAM policy.
    "roles/iam.roleViewer": "let preflight read the kill-switch custom role",
}
DEPLOY_BILLING_ROLES: dict[str, str] = {
    "roles/billing.costsManager": "create and update the project's budget on the billing account",
}
# Granted to the deploy identity on each account of its stack only, never on the project: Google's "Best
# practices for using service accounts" (https://cloud.google.com/iam/docs/best-practices-service-accounts,
# read 2026-11-25) warns that serviceAccountUser on the project lets a principal act as every account in it
# (the Compute Engine default account, often Editor, included).
# A custom role of the bootstrap is named by its role id here (the bootstrap grants its full name).
STACK_ACCOUNT_ROLE_ID = STACK_ACCOUNT.role_id
STACK_ACCOUNT_ROLES: dict[str, str] = {
    "roles/iam.serviceAccountUser": "act as it: jobs, trials, builds, the function, its trigger",
    STACK_ACCOUNT_ROLE_ID: "read, update and delete it with the stack (custom role: no keys, no IAM)",
}
# Only on the kill switch's (guard) account: the one whose IAM policy the stack changes. Not on the others:
# serviceAccountAdmin also holds iam.serviceAccountApiKeyBindings.create (an API key that authenticates as
# the account).
GUARD_ACCOUNT_ROLES: dict[str, str] = {
    "roles/iam.serviceAccountAdmin": "grant Pub/Sub's agent Token Creator on the trigger's account",
}
# Service agents' roles the bootstrap grants once, because no deploy identity may grant a role that carries
# act-as or token permissions (roles/eventarc.serviceAgent carries actAs, getAccessToken, getOpenIdToken).
AGENT_ROLES: dict[str, str] = {"eventarc.googleapis.com": "roles/eventarc.serviceAgent"}

# The main stack's project-level predefined grants: its job identity and the function's build identity.
MAIN_STACK_PROJECT_ROLES = tuple(dict.fromkeys((*PROJECT_ROLES, BUILD_PROJECT_ROLE, BUILD_SOURCE_ROLE)))

# Which role lets each identity manage (deploy) or read (preview, for refresh) each resource type the main
# stack declares. tests/ci checks this covers every type the dev and prod stacks register.
_DYNAMIC = CUSTOM_JOB_TYPE
DEPLOY_ROLE_FOR_TYPE: dict[str, str] = {
    "gcp:projects/service:Service": "roles/serviceusage.serviceUsageAdmin",
    "gcp:storage/bucket:Bucket": "roles/storage.admin",
    "gcp:storage/bucketIAMMember:BucketIAMMember": "roles/storage.admin",
    "gcp:storage/bucketObject:BucketObject": "roles/storage.admin",
    "gcp:artifactregistry/repository:Repository": "roles/artifactregistry.admin",
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": "roles/artifactregistry.admin",
    "docker-build:index:Image": "roles/artifactregistry.admin",
    "gcp:serviceaccount/account:Account": "roles/iam.serviceAccountCreator",
    # services.generateServiceIdentity needs no grant of its own: IAM checks no permission for it (see
    # infra/least_privilege/custom_roles.py RETIRED_ROLE_IDS); the role that manages the services stands here.
    "gcp:projects/serviceIdentity:ServiceIdentity": "roles/serviceusage.serviceUsageAdmin",
    "gcp:projects/iAMMember:IAMMember": "roles/resourcemanager.projectIamAdmin",
    # The Pub/Sub agent's Token Creator on the guard account (GUARD_ACCOUNT_ROLES there), not the project.
    "gcp:serviceaccount/iAMMember:IAMMember": "roles/iam.serviceAccountAdmin",
    "gcp:pubsub/topic:Topic": "roles/pubsub.admin",
    "gcp:pubsub/topicIAMMember:TopicIAMMember": "roles/pubsub.admin",
    "gcp:monitoring/notificationChannel:NotificationChannel": "roles/monitoring.notificationChannelEditor",
    "gcp:billing/budget:Budget": "roles/billing.costsManager",
    "gcp:vertex/aiTensorboard:AiTensorboard": "roles/aiplatform.user",
    "gcp:cloudfunctionsv2/function:Function": "roles/cloudfunctions.developer",
    "gcp:cloudrunv2/serviceIamMember:ServiceIamMember": "roles/run.admin",
    _DYNAMIC: "roles/aiplatform.user",
    MODEL_VERSION_TYPE: "roles/aiplatform.user",
    TUNING_JOB_TYPE: "roles/aiplatform.user",
    IMAGE_BUILD_TYPE: "roles/cloudbuild.builds.editor",
}
PREVIEW_ROLE_FOR_TYPE: dict[str, str] = {
    "gcp:projects/service:Service": "roles/serviceusage.serviceUsageViewer",
    "gcp:storage/bucket:Bucket": "roles/storage.bucketViewer",
    "gcp:storage/bucketIAMMember:BucketIAMMember": "roles/iam.securityReviewer",
    "gcp:storage/bucketObject:BucketObject": "roles/storage.objectViewer",
    "gcp:artifactregistry/repository:Repository": "roles/artifactregistry.reader",
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": "roles/iam.securityReviewer",
    "docker-build:index:Image": "roles/artifactregistry.reader",
    "gcp:serviceaccount/account:Account": "roles/iam.serviceAccountViewer",
    "gcp:projects/serviceIdentity:ServiceIdentity": "roles/serviceusage.serviceUsageViewer",
    "gcp:projects/iAMMember:IAMMember": "roles/iam.securityReviewer",
    "gcp:serviceaccount/iAMMember:IAMMember": "roles/iam.securityReviewer",
    "gcp:pubsub/topic:Topic": "roles/pubsub.viewer",
    "gcp:pubsub/topicIAMMember:TopicIAMMember": "roles/iam.securityReviewer",
    "gcp:monitoring/notificationChannel:NotificationChannel": "roles/monitoring.viewer",
    "gcp:billing/budget:Budget": "roles/billing.viewer",
    "gcp:vertex/aiTensorboard:AiTensorboard": "roles/aiplatform.viewer",
    "gcp:cloudfunctionsv2/function:Function": "roles/cloudfunctions.viewer",
    "gcp:cloudrunv2/serviceIamMember:ServiceIamMember": "roles/iam.securityReviewer",
    _DYNAMIC: "roles/aiplatform.viewer",
    MODEL_VERSION_TYPE: "roles/aiplatform.viewer",
    TUNING_JOB_TYPE: "roles/aiplatform.viewer",
    # Refreshing the image looks its tag up in the registry.
    IMAGE_BUILD_TYPE: "roles/artifactregistry.reader",
}

# Types that make no Google Cloud call (pulumiverse-time's Sleep waits locally).
LOCAL_TYPES = frozenset({"time:index/sleep:Sleep"})

PROJECT_IAM_ADMIN = "roles/resourcemanager.projectIamAdmin"


def grantable_project_roles(project: str) -> list[str]:
    """Project roles the deploy identity may grant: the main stack's, plus the shared custom roles (kill
    switch, TensorBoard uploader). None carries act-as, token or setIamPolicy permissions, nor starts
    Vertex AI work (tests/ci checks it against Google's role list).

    No stack name in it: the condition holds for every stack, and for stacks created after the bootstrap.
    """
    return [*MAIN_STACK_PROJECT_ROLES, KILL_SWITCH.name(project), TENSORBOARD_UPLOADER.name(project)]


def grant_condition(roles: list[str]) -> str:
    """IAM condition that lets a projectIamAdmin grant (or revoke) only `roles`."""
    quoted = ", ".join(f"'{r}'" for r in roles)
    return f"api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly([{quoted}])"
