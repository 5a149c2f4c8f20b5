"""build(cfg): APIs, GitHub federation, the state backend, and the preview and deploy identities."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from infra.bootstrap import roles
from infra.bootstrap.config import NAMESPACE, BootstrapConfig
from infra.bootstrap.federation import (
    GitHubFederation,
    GitHubFederationArgs,
    environment_principal_set,
    repository_principal_set,
)
from infra.bootstrap.identity import CiIdentity, CiIdentityArgs
from infra.bootstrap.retired import RetiredCustomRole
from infra.bootstrap.stack_accounts import stack_accounts
from infra.bootstrap.state import StateBackend, StateBackendArgs
from infra.labels import stack_labels
from infra.least_privilege import custom_roles

# What federation, impersonation, KMS and state need before the deploy identity can enable the rest.
REQUIRED_APIS = [
    "cloudkms.googleapis.com",
    "cloudresourcemanager.googleapis.com",
    "iam.googleapis.com",
    "iamcredentials.googleapis.com",  # short-lived tokens for impersonated service accounts
    "serviceusage.googleapis.com",
    "storage.googleapis.com",
    "sts.googleapis.com",  # exchanges GitHub's OIDC token for a federated token
    "eventarc.googleapis.com",  # its service agent, granted its role here (roles.AGENT_ROLES)
]
PREVIEW_ACCOUNT_ID = "vt-ci-preview"
DEPLOY_ACCOUNT_ID = "vt-ci-deploy"
# Pulumi names of the custom roles (kept: renaming would replace protected roles of existing bootstraps).
CUSTOM_ROLE_RESOURCES = {
    custom_roles.KILL_SWITCH.role_id: "kill-switch-role",
    custom_roles.TENSORBOARD_UPLOADER.role_id: "tensorboard-uploader-role",
    custom_roles.STACK_ACCOUNT.role_id: "stack-account-role",
}
# Pulumi names of the roles earlier bootstraps created and this one deletes (retired.py).
RETIRED_ROLE_RESOURCES = {"vertexTrainingDeploy": "deploy-extras-role"}


def build(cfg: BootstrapConfig) -> dict[str, Any]:
    labels = stack_labels(NAMESPACE, pulumi.get_stack())
    apis = [
        gcp.projects.Service(
            f"api-{api.split('.')[0]}",
            project=cfg.project,
            service=api,
            disable_on_destroy=False,  # other workloads in the project may rely on them
        )
        for api in REQUIRED_APIS
    ]
    after_apis = pulumi.ResourceOptions(depends_on=apis)
    federation = GitHubFederation(
        "github",
        GitHubFederationArgs(
            project=cfg.project,
            pool_id=cfg.pool_id,
            provider_id=cfg.provider_id,
            repository=cfg.github_repository,
            repository_id=cfg.github_repository_id,
        ),
        opts=after_apis,
    )
    state = StateBackend(
        "state",
        StateBackendArgs(project=cfg.project, region=cfg.region, bucket=cfg.state_bucket, labels=labels),
        opts=after_apis,
    )

    preview = CiIdentity(
        "preview",
        CiIdentityArgs(
            project=cfg.project,
            account_id=PREVIEW_ACCOUNT_ID,
            description=f"Read-only: `pulumi preview` of pull requests in {cfg.github_repository}",
            principal=federation.pool_name.apply(
                lambda p: repository_principal_set(p, cfg.github_repository, cfg.github_repository_id)
            ),
            project_roles=list(roles.PREVIEW_PROJECT_ROLES),
            billing_account=cfg.billing_account,
            billing_roles=list(roles.PREVIEW_BILLING_ROLES),
            state_bucket=state.bucket.name,
            state_bucket_role="roles/storage.objectViewer",
            secrets_key=state.key.id,
            secrets_key_role="roles/cloudkms.cryptoKeyDecrypter",
        ),
        federation=federation.provider,
        opts=after_apis,
    )
    # The custom roles live here, not in a stack: deleting a custom role blocks its id for 37 days.
    created_roles = {
        role.role_id: gcp.projects.IAMCustomRole(
            CUSTOM_ROLE_RESOURCES[role.role_id],
            project=cfg.project,
            role_id=role.role_id,
            title=role.title,
            description=role.description,
            permissions=list(role.permissions),
            stage="GA",
            opts=pulumi.ResourceOptions(depends_on=apis, protect=True),
        )
        for role in custom_roles.ALL
    }
    grantable = roles.grantable_project_roles(cfg.project)
    deploy = CiIdentity(
        "deploy",
        CiIdentityArgs(
            project=cfg.project,
            account_id=DEPLOY_ACCOUNT_ID,
            description=(
                f"`pulumi up` of stack {cfg.deploy_stack} from the {cfg.deploy_stack!r} environment "
                f"of {cfg.github_repository}"
            ),
            principal=federation.pool_name.apply(lambda p: environment_principal_set(p, cfg.deploy_stack)),
            project_roles=list(roles.DEPLOY_PROJECT_ROLES),
            billing_account=cfg.billing_account,
            billing_roles=list(roles.DEPLOY_BILLING_ROLES),
            state_bucket=state.bucket.name,
            state_bucket_role="roles/storage.objectUser",
            secrets_key=state.key.id,
            secrets_key_role="roles/cloudkms.cryptoKeyEncrypterDecrypter",
            conditions={
                roles.PROJECT_IAM_ADMIN: ("Only the stack's own grants", roles.grant_condition(grantable))
            },
        ),
        federation=federation.provider,
        opts=after_apis,
    )

    provider_name = federation.provider_name
    deployer = deploy.email.apply(lambda email: f"serviceAccount:{email}")
    for role_id in custom_roles.RETIRED_ROLE_IDS:
        RetiredCustomRole(RETIRED_ROLE_RESOURCES[role_id], cfg.project, role_id)
    stack_accounts(
        cfg.project,
        cfg.deploy_stack,
        deployer,
        after_apis,
        {role_id: role.name for role_id, role in created_roles.items()},
    )
    _grant_agent_roles(cfg.project, after_apis)

    return {
        "workloadIdentityProvider": provider_name,
        "previewServiceAccount": preview.email,
        "deployServiceAccount": deploy.email,
        "stateBackendUrl": state.backend_url,
        "secretsProvider": state.secrets_provider,
        "killSwitchRole": created_roles[custom_roles.KILL_SWITCH.role_id].name,
        "tensorboardUploaderRole": created_roles[custom_roles.TENSORBOARD_UPLOADER.role_id].name,
        # Paste these into Settings -> Secrets and variables -> Actions -> Variables.
        "githubVariables": {
            "GCP_WORKLOAD_IDENTITY_PROVIDER": provider_name,
            "GCP_PREVIEW_SERVICE_ACCOUNT": preview.email,
            "GCP_DEPLOY_SERVICE_ACCOUNT": deploy.email,
            "PULUMI_BACKEND_URL": state.backend_url,
        },
    }


def _grant_agent_roles(project: str, opts: pulumi.ResourceOptions) -> None:
    """Generate the agents whose roles carry token permissions, and grant those roles once, as an owner."""
    for service, role in roles.AGENT_ROLES.items():
        short = service.split(".")[0]
        agent = gcp.projects.ServiceIdentity(f"{short}-agent", project=project, service=service, opts=opts)
        gcp.projects.IAMMember(
            f"{short}-agent-role", project=project, role=role, member=agent.member, opts=opts
        )
