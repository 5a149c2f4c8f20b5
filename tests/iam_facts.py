"""Permissions of the predefined roles this project grants, as Google's IAM reference lists them.

Only the permissions the tests reason about are listed (a subset of each role). Sources:
https://cloud.google.com/iam/docs/roles-permissions (per-service pages: storage, serviceusage, billing,
pubsub, iam, cloudfunctions, aiplatform, resourcemanager) and, for the legacy storage roles,
https://cloud.google.com/storage/docs/access-control/iam-roles.
"""

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    # Cloud Storage
    "roles/storage.objectAdmin": frozenset(
        {"storage.objects.create", "storage.objects.delete", "storage.objects.get", "storage.objects.list"}
    ),
    "roles/storage.objectViewer": frozenset({"storage.objects.get", "storage.objects.list"}),
    "roles/storage.legacyBucketReader": frozenset({"storage.buckets.get", "storage.objects.list"}),
    "roles/storage.bucketViewer": frozenset({"storage.buckets.get", "storage.buckets.list"}),
    "roles/storage.admin": frozenset(
        {
            "storage.buckets.create",
            "storage.buckets.get",
            "storage.buckets.setIamPolicy",
            "storage.objects.create",
        }
    ),
    # Service Usage (https://cloud.google.com/service-usage/docs/access-control)
    "roles/serviceusage.serviceUsageViewer": frozenset(
        {"serviceusage.services.get", "serviceusage.services.list"}
    ),
    "roles/serviceusage.serviceUsageConsumer": frozenset(
        {"serviceusage.services.get", "serviceusage.services.list", "serviceusage.services.use"}
    ),
    "roles/serviceusage.serviceUsageAdmin": frozenset(
        {
            "serviceusage.services.enable",
            "serviceusage.services.get",
            "serviceusage.services.use",
            "cloudquotas.quotas.get",
        }
    ),
    # Cloud Billing
    "roles/billing.viewer": frozenset({"billing.budgets.get", "billing.budgets.list"}),
    "roles/billing.costsManager": frozenset(
        {"billing.budgets.create", "billing.budgets.get", "billing.budgets.update"}
    ),
    # Resource Manager
    "roles/browser": frozenset({"resourcemanager.projects.get"}),
    "roles/resourcemanager.projectIamAdmin": frozenset(
        {"resourcemanager.projects.getIamPolicy", "resourcemanager.projects.setIamPolicy"}
    ),
    # IAM
    "roles/iam.serviceAccountViewer": frozenset({"iam.serviceAccounts.get", "iam.serviceAccounts.list"}),
    "roles/iam.serviceAccountAdmin": frozenset(
        {
            "iam.serviceAccounts.create",
            "iam.serviceAccounts.delete",
            "iam.serviceAccounts.get",
            "iam.serviceAccounts.setIamPolicy",
            "iam.serviceAccounts.update",
            "iam.serviceAccountApiKeyBindings.create",
        }
    ),
    "roles/iam.roleViewer": frozenset({"iam.roles.get", "iam.roles.list", "resourcemanager.projects.get"}),
    "roles/iam.serviceAccountCreator": frozenset(
        {"iam.serviceAccounts.create", "iam.serviceAccounts.get", "iam.serviceAccounts.list"}
    ),
    "roles/iam.serviceAccountUser": frozenset({"iam.serviceAccounts.actAs"}),
    # Artifact Registry, Cloud Build, Cloud Run, Cloud Monitoring
    "roles/artifactregistry.admin": frozenset(
        {"artifactregistry.repositories.create", "artifactregistry.repositories.setIamPolicy"}
    ),
    "roles/cloudbuild.builds.editor": frozenset(
        {"cloudbuild.builds.create", "cloudbuild.builds.get", "cloudbuild.builds.list"}
    ),
    "roles/run.admin": frozenset({"run.services.get", "run.services.setIamPolicy"}),
    "roles/monitoring.notificationChannelEditor": frozenset(
        {"monitoring.notificationChannels.create", "monitoring.notificationChannels.get"}
    ),
    # Pub/Sub, Cloud Functions, Vertex AI
    "roles/pubsub.viewer": frozenset({"pubsub.topics.get"}),
    "roles/pubsub.admin": frozenset(
        {"pubsub.topics.create", "pubsub.topics.get", "pubsub.topics.setIamPolicy"}
    ),
    "roles/logging.viewer": frozenset({"logging.logEntries.list"}),
    "roles/cloudfunctions.viewer": frozenset({"cloudfunctions.functions.get"}),
    "roles/cloudfunctions.developer": frozenset(
        {"cloudfunctions.functions.create", "cloudfunctions.functions.get"}
    ),
    "roles/aiplatform.viewer": frozenset(
        {
            "aiplatform.customJobs.get",
            "aiplatform.customJobs.list",
            "aiplatform.hyperparameterTuningJobs.get",
            "aiplatform.hyperparameterTuningJobs.list",
            "aiplatform.models.get",
            "aiplatform.models.list",
        }
    ),
    "roles/aiplatform.user": frozenset(
        {
            "aiplatform.customJobs.cancel",
            "aiplatform.customJobs.create",
            "aiplatform.customJobs.delete",
            "aiplatform.customJobs.get",
            "aiplatform.customJobs.list",
            "aiplatform.hyperparameterTuningJobs.cancel",
            "aiplatform.hyperparameterTuningJobs.create",
            "aiplatform.hyperparameterTuningJobs.delete",
            "aiplatform.hyperparameterTuningJobs.get",
            "aiplatform.hyperparameterTuningJobs.list",
            # Batch prediction: IAM "Vertex AI roles and permissions" (read 2026-11-26).
            "aiplatform.batchPredictionJobs.cancel",
            "aiplatform.batchPredictionJobs.create",
            "aiplatform.batchPredictionJobs.delete",
            "aiplatform.batchPredictionJobs.get",
            "aiplatform.batchPredictionJobs.list",
            "aiplatform.models.delete",
            "aiplatform.models.get",
            "aiplatform.models.list",
            "aiplatform.models.update",
            "aiplatform.models.upload",
            "aiplatform.tensorboards.create",
            # Vertex AI Experiments (ML Metadata): the experiment and run contexts.
            "aiplatform.metadataStores.create",
            "aiplatform.metadataStores.get",
            "aiplatform.contexts.addContextChildren",
            "aiplatform.contexts.create",
            "aiplatform.contexts.get",
            "aiplatform.contexts.update",
            # Endpoints: iam-dataset gcp/roles/aiplatform.user.json at 02b6c7c8 (read 2026-11-29).
            "aiplatform.endpoints.create",
            "aiplatform.endpoints.delete",
            "aiplatform.endpoints.deploy",
            "aiplatform.endpoints.get",
            "aiplatform.endpoints.list",
            "aiplatform.endpoints.undeploy",
        }
    ),
}


def permissions(roles: object) -> set[str]:
    """Union of the listed permissions of `roles` (roles not listed here contribute nothing)."""
    return set().union(*(ROLE_PERMISSIONS.get(role, frozenset()) for role in roles))  # type: ignore[union-attr]
