"""The project's custom roles: created once per Google Cloud project by the bootstrap, granted by the stacks.

Plain data (no Pulumi import) so the CrossGuard policy pack, which runs in its own virtualenv, can read it.
They live in the bootstrap, never in a stack: IAM soft-deletes a deleted role and keeps its id unusable from
day 7 to day 37 (https://cloud.google.com/iam/docs/creating-custom-roles#deleting-custom-role).
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.guard import job_kinds


@dataclass(frozen=True)
class CustomRole:
    role_id: str
    title: str
    description: str
    permissions: tuple[str, ...]

    def name(self, project: str) -> str:
        return f"projects/{project}/roles/{self.role_id}"


# Exactly what infra/guard/live_jobs.py needs for each kind of the JOB_KINDS table (infra/guard/job_kinds.py):
# list (get for listed jobs) and cancel; no create, no delete. A kind added to that table adds its permissions
# here.
# And what infra/guard/deployed_models.py needs to undeploy the stack's deployed models: list the endpoints
# (ListEndpoints answers their deployed models and traffic) and undeploy (EndpointService.UndeployModel);
# names as roles/aiplatform.user holds them (iam-dataset gcp/roles/aiplatform.user.json at 02b6c7c8,
# read 2026-11-29). Not deploy, update or delete: the kill switch starts nothing and removes no endpoint.
ENDPOINT_PERMISSIONS = ("aiplatform.endpoints.list", "aiplatform.endpoints.undeploy")
KILL_SWITCH = CustomRole(
    role_id="vertexTrainingKillSwitch",
    title="Vertex training kill switch",
    description=(
        "List and cancel Vertex AI custom, tuning and batch prediction jobs; list endpoints and undeploy "
        "models; nothing else."
    ),
    permissions=tuple(sorted((*job_kinds.permissions(), *ENDPOINT_PERMISSIONS))),
)

# What Vertex AI's TensorBoard uploader calls as the job's account, instead of roles/aiplatform.user (which
# Google's setup page names, https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-setup, read
# 2026-11-25, and which can create CustomJobs, tuning jobs and pipelines the kill switch never sees). Read
# from the uploader in google-cloud-aiplatform (github.com/googleapis/python-aiplatform at 91cc8ce4,
# 2026-08-21): tensorboard/uploader_utils.py get_tensorboard (its blob storage path),
# batch_create_tensorboard_time_series, create/list_tensorboard_time_series; uploader.py create_experiment
# (metadata Experiment get/create with a backing TensorBoard experiment), write_tensorboard_experiment_data;
# uploader_utils._create_or_get_run_resource (metadata ExperimentRun get/create: contexts, their backing
# TensorboardRun artifact); profile_uploader.py
# write_tensorboard_run_data; metadata/metadata_store.py get_or_create of the default store. Permission names
# as Google's IAM reference spells them (iam-dataset gcp/roles, see google_roles.json). No create of any job,
# pipeline, endpoint or TensorBoard instance.
TENSORBOARD_UPLOADER = CustomRole(
    role_id="vertexTrainingTensorboardUploader",
    title="Vertex training TensorBoard uploader",
    description="Upload a job's TensorBoard logs to an existing Vertex AI TensorBoard; starts no work.",
    permissions=(
        "aiplatform.tensorboards.get",
        "aiplatform.tensorboardExperiments.create",
        "aiplatform.tensorboardExperiments.get",
        "aiplatform.tensorboardExperiments.write",
        "aiplatform.tensorboardRuns.create",
        "aiplatform.tensorboardRuns.get",
        "aiplatform.tensorboardRuns.list",
        "aiplatform.tensorboardRuns.write",
        "aiplatform.tensorboardTimeSeries.batchCreate",
        "aiplatform.tensorboardTimeSeries.create",
        "aiplatform.tensorboardTimeSeries.get",
        "aiplatform.tensorboardTimeSeries.list",
        "aiplatform.metadataStores.create",
        "aiplatform.metadataStores.get",
        "aiplatform.contexts.addContextArtifactsAndExecutions",
        "aiplatform.contexts.addContextChildren",
        "aiplatform.contexts.create",
        "aiplatform.contexts.get",
        "aiplatform.contexts.list",
        "aiplatform.contexts.update",
        "aiplatform.artifacts.create",
        "aiplatform.artifacts.get",
        "aiplatform.artifacts.list",
        "aiplatform.artifacts.update",
    ),
)

# A custom role earlier bootstraps created, and the bootstrap now deletes (infra/bootstrap/retired.py): it
# held only serviceusage.services.generateServiceIdentity, which no predefined role holds (roles/owner
# included, iam-dataset at the commit of google_roles.json) because IAM checks no permission of that name for
# services.generateServiceIdentity: Service Usage's access-control table lists none for the method, and the
# firebase-tools maintainers say "your CI role needs no grant for it" (firebase/firebase-tools#11005, #11070;
# read 2026-11-26). IAM refuses to create a custom role with a permission it does not know.
RETIRED_ROLE_IDS: tuple[str, ...] = ("vertexTrainingDeploy",)

# What vt-ci-deploy does to the stack's accounts but the guard's (infra/preflight/permissions.py
# ACCOUNT_CALLS), granted on each of them instead of roles/iam.serviceAccountAdmin: that role also holds
# setIamPolicy and iam.serviceAccountApiKeyBindings.create (an API key that authenticates as the account).
STACK_ACCOUNT = CustomRole(
    role_id="vertexTrainingStackAccount",
    title="Vertex training stack account upkeep",
    description="Read, update and delete one of a stack's service accounts; no act-as, keys or IAM.",
    permissions=("iam.serviceAccounts.get", "iam.serviceAccounts.update", "iam.serviceAccounts.delete"),
)

ALL: tuple[CustomRole, ...] = (KILL_SWITCH, TENSORBOARD_UPLOADER, STACK_ACCOUNT)
