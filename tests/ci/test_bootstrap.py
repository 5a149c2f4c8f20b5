"""The bootstrap stack under mocks: federation, exact CI roles, scoped bindings, bad config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.bootstrap import roles, stack_accounts
from infra.bootstrap.config import NAMESPACE, BootstrapConfig, ConfigError, load_config
from infra.bootstrap.stack import build
from infra.cloudbuild import identity as builder
from infra.components import identity as job_identity
from infra.components import killswitch
from infra.least_privilege import custom_roles
from tests.fakes.pulumi_mocks import MockedRun, Registered, run_program

BOOTSTRAP = Path(__file__).resolve().parents[2] / "infra" / "bootstrap"
REQUIRED = {
    "project": "my-gcp-project",
    "githubRepository": "my-org/vertex-training",
    "billingAccount": "012345-6789AB-CDEF01",
}
PREVIEW_ROLES = {
    "roles/browser",
    "roles/serviceusage.serviceUsageViewer",
    "roles/serviceusage.serviceUsageConsumer",
    "roles/storage.bucketViewer",
    "roles/storage.objectViewer",
    "roles/artifactregistry.reader",
    "roles/iam.serviceAccountViewer",
    "roles/iam.securityReviewer",
    "roles/pubsub.viewer",
    "roles/monitoring.viewer",
    "roles/aiplatform.viewer",
    "roles/cloudfunctions.viewer",
}
DEPLOY_ROLES = {
    "roles/serviceusage.serviceUsageAdmin",
    "roles/storage.admin",
    "roles/artifactregistry.admin",
    "roles/iam.serviceAccountCreator",
    "roles/resourcemanager.projectIamAdmin",
    "roles/pubsub.admin",
    "roles/monitoring.notificationChannelEditor",
    "roles/cloudfunctions.developer",
    "roles/run.admin",
    "roles/aiplatform.user",
    "roles/cloudbuild.builds.editor",
    "roles/logging.viewer",
    "roles/iam.roleViewer",
}
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
SA_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"


def run_bootstrap(**overrides: str) -> MockedRun:
    cfg = load_config({**REQUIRED, **overrides})
    return run_program(lambda: build(cfg), project=NAMESPACE, stack="ci")


@pytest.fixture(scope="module")
def run() -> MockedRun:
    return run_bootstrap()


def member_of(run: MockedRun, identity: str) -> str:
    return f"serviceAccount:vt-ci-{identity}@my-gcp-project.iam.gserviceaccount.com"


def grants(run: MockedRun, typ: str, member: str) -> list[Registered]:
    return [r for r in run.by_type(typ) if r.inputs["member"] == member]


def test_pool_and_provider_trust_only_this_repository(run: MockedRun) -> None:
    pool = run.one("gcp:iam/workloadIdentityPool:WorkloadIdentityPool")
    provider = run.one("gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider")
    assert pool.inputs["workloadIdentityPoolId"] == "github"
    assert provider.inputs["workloadIdentityPoolProviderId"] == "github-actions"
    assert provider.inputs["oidc"] == {"issuerUri": "https://token.actions.githubusercontent.com"}
    assert provider.inputs["attributeCondition"] == "assertion.repository == 'my-org/vertex-training'"
    mapping = provider.inputs["attributeMapping"]
    assert mapping["google.subject"] == "assertion.sub"
    assert mapping["attribute.repository"] == "assertion.repository"
    assert mapping["attribute.environment"] == "assertion.environment"
    assert provider.parent == pool.parent  # both children of the GitHubFederation component


def test_repository_id_pins_the_repository_by_id() -> None:
    """A renamed repository keeps its trust; a new one that takes the old name gets none."""
    run = run_bootstrap(githubRepositoryId="987654321")
    provider = run.one("gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider")
    assert provider.inputs["attributeCondition"] == "assertion.repository_id == '987654321'"
    assert run.named("preview-federated").inputs["member"] == (
        "principalSet://iam.googleapis.com/github-pool/attribute.repository_id/987654321"
    )


def test_preview_identity_is_read_only(run: MockedRun) -> None:
    member = member_of(run, "preview")
    project_roles = [g.inputs["role"] for g in grants(run, PROJECT_MEMBER, member)]
    assert sorted(project_roles) == sorted(PREVIEW_ROLES)  # each once
    assert all("condition" not in g.inputs for g in grants(run, PROJECT_MEMBER, member))
    billing = grants(run, "gcp:billing/accountIamMember:AccountIamMember", member)
    assert [(b.inputs["role"], b.inputs["billingAccountId"]) for b in billing] == [
        ("roles/billing.viewer", "012345-6789AB-CDEF01")
    ]
    assert [g.inputs["role"] for g in grants(run, "gcp:storage/bucketIAMMember:BucketIAMMember", member)] == [
        "roles/storage.objectViewer"
    ]
    assert [
        g.inputs["role"] for g in grants(run, "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember", member)
    ] == ["roles/cloudkms.cryptoKeyDecrypter"]


def test_deploy_identity_has_what_up_needs_and_can_grant_only_the_stacks_roles(run: MockedRun) -> None:
    member = member_of(run, "deploy")
    project = grants(run, PROJECT_MEMBER, member)
    assert sorted(g.inputs["role"] for g in project) == sorted(DEPLOY_ROLES)
    # No custom role of permissions IAM does not check: the service agents need no grant of their own.
    custom = [r.inputs["roleId"] for r in run.by_type("gcp:projects/iAMCustomRole:IAMCustomRole")]
    assert "vertexTrainingDeploy" not in custom
    conditioned = {g.inputs["role"]: g.inputs["condition"] for g in project if "condition" in g.inputs}
    assert set(conditioned) == {"roles/resourcemanager.projectIamAdmin"}
    assert conditioned["roles/resourcemanager.projectIamAdmin"]["expression"] == (
        "api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly(["
        "'roles/logging.logWriter', 'roles/monitoring.metricWriter', 'roles/storage.objectAdmin', "
        "'projects/my-gcp-project/roles/vertexTrainingKillSwitch', "
        "'projects/my-gcp-project/roles/vertexTrainingTensorboardUploader'])"
    )
    billing = grants(run, "gcp:billing/accountIamMember:AccountIamMember", member)
    assert [(b.inputs["role"], b.inputs["billingAccountId"]) for b in billing] == [
        ("roles/billing.costsManager", "012345-6789AB-CDEF01")
    ]
    assert [g.inputs["role"] for g in grants(run, "gcp:storage/bucketIAMMember:BucketIAMMember", member)] == [
        "roles/storage.objectUser"
    ]
    assert [
        g.inputs["role"] for g in grants(run, "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember", member)
    ] == ["roles/cloudkms.cryptoKeyEncrypterDecrypter"]


def test_no_primitive_roles_and_no_keys(run: MockedRun) -> None:
    roles = [r.inputs["role"] for r in run.resources if "role" in r.inputs]
    assert not {"roles/owner", "roles/editor", "roles/viewer"} & set(roles)
    assert not [r for r in run.resources if r.type.startswith("gcp:serviceaccount/key:")]
    ci = [
        a
        for a in run.by_type("gcp:serviceaccount/account:Account")
        if a.inputs["accountId"].startswith("vt-ci-")
    ]
    assert len(ci) == 2


def test_preview_may_be_used_by_any_run_of_the_repository_deploy_only_by_the_environment(
    run: MockedRun,
) -> None:
    provider = run.one("gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider")
    bindings = {
        b.name: b for b in run.by_type(SA_MEMBER) if b.inputs["role"] == "roles/iam.workloadIdentityUser"
    }
    assert set(bindings) == {"preview-federated", "deploy-federated"}
    for identity, binding in (
        ("preview", bindings["preview-federated"]),
        ("deploy", bindings["deploy-federated"]),
    ):
        assert binding.inputs["role"] == "roles/iam.workloadIdentityUser"
        # Mocked `name` outputs are resource names: each binding is on its own account.
        assert binding.inputs["serviceAccountId"] == f"{identity}-sa"
        assert provider.urn in binding.dependencies
    # The real pool name is "projects/<number>/locations/global/workloadIdentityPools/github";
    # mocked, it is the resource name.
    assert bindings["preview-federated"].inputs["member"] == (
        "principalSet://iam.googleapis.com/github-pool/attribute.repository/my-org/vertex-training"
    )
    # Bound on the environment attribute, not GitHub's `sub` string (whose format is changing).
    assert bindings["deploy-federated"].inputs["member"] == (
        "principalSet://iam.googleapis.com/github-pool/attribute.environment/dev"
    )
    assert not [b for b in run.by_type(SA_MEMBER) if "/subject/" in b.inputs["member"]]


def test_deploy_environment_follows_the_deploy_stack_and_the_condition_does_not() -> None:
    """Any stack name (a new one after a destroy included) can grant the one shared kill-switch role."""
    run = run_bootstrap(deployStack="staging")
    deploy = run.named("deploy-federated")
    assert deploy.inputs["member"].endswith("/attribute.environment/staging")
    admin = [
        g for g in run.by_type(PROJECT_MEMBER) if g.inputs["role"] == "roles/resourcemanager.projectIamAdmin"
    ]
    expression = admin[0].inputs["condition"]["expression"]
    assert expression == roles.grant_condition(roles.grantable_project_roles("my-gcp-project"))
    assert "staging" not in expression


@pytest.mark.parametrize(
    ("resource", "role", "output"),
    [
        ("kill-switch-role", custom_roles.KILL_SWITCH, "killSwitchRole"),
        ("tensorboard-uploader-role", custom_roles.TENSORBOARD_UPLOADER, "tensorboardUploaderRole"),
    ],
)
def test_the_custom_roles_live_in_the_bootstrap_stack(
    run: MockedRun, resource: str, role: custom_roles.CustomRole, output: str | None
) -> None:
    """Protected and shared: destroying a main stack never soft-deletes one (ids blocked 7-37 days)."""
    created = run.named(resource)
    assert created.type == "gcp:projects/iAMCustomRole:IAMCustomRole" and created.protect
    assert created.inputs["roleId"] == role.role_id
    assert sorted(created.inputs["permissions"]) == sorted(role.permissions)
    if output:
        assert run.outputs[output] == role.name("my-gcp-project")
    assert killswitch.role_name("my-gcp-project") == custom_roles.KILL_SWITCH.name("my-gcp-project")


def test_a_retired_custom_role_is_taken_over_by_an_unprotected_marker(run: MockedRun) -> None:
    """vertexTrainingDeploy, protected by earlier bootstraps, goes in one `up`: its Pulumi name is a marker
    that replaces its state (infra/bootstrap/retired.py); its grant to the deploy identity goes too."""
    from infra.bootstrap.retired import RESOURCE_TYPE

    marker = run.named("deploy-extras-role")
    assert marker.type == RESOURCE_TYPE and not marker.protect
    assert marker.inputs["retired_role"] == "projects/my-gcp-project/roles/vertexTrainingDeploy"
    assert not [r for r in run.resources if r.name == "deploy-extras"]


@pytest.mark.parametrize("stack", ["dev", "staging"])
def test_the_deploy_identity_acts_only_as_its_stacks_accounts(stack: str) -> None:
    """Act-as and account admin on each account the deploy stack's components name, none on the project."""
    run = run_bootstrap(deployStack=stack)
    deployer = "serviceAccount:vt-ci-deploy@my-gcp-project.iam.gserviceaccount.com"
    on_accounts = [g for g in run.by_type(SA_MEMBER) if g.inputs["member"] == deployer]
    accounts = {a.name: a.inputs["accountId"] for a in run.by_type("gcp:serviceaccount/account:Account")}
    targets = {(accounts[g.inputs["serviceAccountId"]], g.inputs["role"]) for g in on_accounts}
    guard = killswitch.guard_names("vertex-training", stack)
    ids = {
        job_identity.account_id(stack),
        builder.account_id(stack),
        guard.account_id,
        guard.build_account_id,
    }
    custom = "projects/my-gcp-project/roles/"
    expected = {
        (i, r if r.startswith("roles/") else custom + r)
        for purpose, i in stack_accounts.stack_account_ids(stack).items()
        for r in stack_accounts.account_roles(purpose)
    }
    assert targets == expected
    admin = {i for i, r in targets if r == "roles/iam.serviceAccountAdmin"}
    assert admin == {guard.account_id}, "account admin (setIamPolicy, API key bindings) on the guard only"
    stack_ids = {
        a.urn for a in run.by_type("gcp:serviceaccount/account:Account") if a.inputs["accountId"] in ids
    }
    assert len(stack_ids) == 4
    api_urns = {a.urn for a in run.by_type("gcp:projects/service:Service")}
    for account in (a for a in run.by_type("gcp:serviceaccount/account:Account") if a.urn in stack_ids):
        assert api_urns <= set(account.dependencies), "created after the IAM API is enabled"
        assert set(account.ignore_changes) == {"displayName", "description"}, "the stack names it"
    project_roles = {g.inputs["role"] for g in grants(run, PROJECT_MEMBER, deployer)}
    assert not project_roles & {*roles.STACK_ACCOUNT_ROLES, *roles.GUARD_ACCOUNT_ROLES}
    assert (
        yaml.safe_load((BOOTSTRAP.parents[1] / "Pulumi.yaml").read_text())["name"]
        == stack_accounts.MAIN_PROJECT
    )


def test_the_eventarc_agent_gets_its_role_from_the_bootstrap_only(run: MockedRun) -> None:
    """The role carries actAs/getAccessToken: granted once here, by an owner, never by a deploy identity."""
    (agent,) = run.by_type("gcp:projects/serviceIdentity:ServiceIdentity")
    assert agent.inputs["service"] == "eventarc.googleapis.com"
    (grant,) = [g for g in run.by_type(PROJECT_MEMBER) if g.inputs["role"] == "roles/eventarc.serviceAgent"]
    assert (
        grant.inputs["member"]
        == "serviceAccount:service-123456789012@gcp-sa-eventarc.iam.gserviceaccount.com"
    )
    assert "roles/eventarc.serviceAgent" not in roles.grantable_project_roles("my-gcp-project")
    apis = run.by_type("gcp:projects/service:Service")
    assert "eventarc.googleapis.com" in {a.inputs["service"] for a in apis}
    assert {a.urn for a in apis} <= set(agent.dependencies), "generated after its API is enabled"
    assert agent.urn in grant.dependencies, "granted after the agent exists"


def test_state_bucket_and_secrets_key_are_hardened_and_protected(run: MockedRun) -> None:
    bucket = run.one("gcp:storage/bucket:Bucket")
    assert bucket.inputs["name"] == "my-gcp-project-pulumi-state"
    assert bucket.inputs["uniformBucketLevelAccess"] is True
    assert bucket.inputs["publicAccessPrevention"] == "enforced"
    assert bucket.inputs["versioning"] == {"enabled": True}
    assert bucket.inputs["forceDestroy"] is False
    assert bucket.inputs["labels"] == {
        "managed-by": "pulumi",
        "pulumi_project": "vertex-training-bootstrap",
        "pulumi_stack": "ci",
    }
    key = run.one("gcp:kms/cryptoKey:CryptoKey")
    assert key.inputs["purpose"] == "ENCRYPT_DECRYPT" and key.inputs["rotationPeriod"] == "7776000s"
    ring = run.one("gcp:kms/keyRing:KeyRing")
    assert bucket.protect and key.protect and ring.protect
    assert ring.inputs["location"] == bucket.inputs["location"] == "us-central1"


def test_apis_are_enabled_first_and_never_disabled(run: MockedRun) -> None:
    apis = run.by_type("gcp:projects/service:Service")
    assert {a.inputs["service"] for a in apis} >= {"iam.googleapis.com", "sts.googleapis.com"}
    assert all(a.inputs["disableOnDestroy"] is False for a in apis)
    api_urns = {a.urn for a in apis}
    for component in ("github", "state", "preview", "deploy"):
        assert api_urns <= set(run.named(component).dependencies)


def test_outputs_are_what_the_workflows_need(run: MockedRun) -> None:
    out = run.outputs
    assert out["stateBackendUrl"] == "gs://my-gcp-project-pulumi-state"
    assert out["secretsProvider"] == (
        "gcpkms://projects/my-gcp-project/locations/us-central1/keyRings/vertex-training-pulumi/"
        "cryptoKeys/pulumi-secrets"
    )
    assert out["githubVariables"] == {
        "GCP_WORKLOAD_IDENTITY_PROVIDER": out["workloadIdentityProvider"],
        "GCP_PREVIEW_SERVICE_ACCOUNT": "vt-ci-preview@my-gcp-project.iam.gserviceaccount.com",
        "GCP_DEPLOY_SERVICE_ACCOUNT": "vt-ci-deploy@my-gcp-project.iam.gserviceaccount.com",
        "PULUMI_BACKEND_URL": "gs://my-gcp-project-pulumi-state",
    }


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"project": None}, "project"),
        ({"project": "My_Project"}, "project"),
        ({"githubRepository": None}, "githubRepository"),
        ({"githubRepository": "vertex-training"}, "githubRepository"),
        ({"githubRepository": "https://github.com/my-org/vertex-training"}, "githubRepository"),
        ({"githubRepository": "my-org/repo' || true || '"}, "githubRepository"),
        ({"billingAccount": "0123456789AB"}, "billingAccount"),
        ({"billingAccount": None}, "billingAccount"),
        ({"githubRepositoryId": "my-org"}, "githubRepositoryId"),
        ({"region": "us central1"}, "region"),
        ({"poolId": "gcp-github"}, "poolId"),
        ({"providerId": "gh"}, "providerId"),
        ({"stateBucket": "Has_Upper"}, "stateBucket"),
        ({"stateBucket": "google-state"}, "stateBucket"),
        ({"deployStack": "dev stack"}, "deployStack"),
    ],
)
def test_bad_config_names_the_key(overrides: dict[str, str | None], key: str) -> None:
    values = {**REQUIRED, **overrides}
    with pytest.raises(ConfigError, match=f"{NAMESPACE}:{key}\\b.*pulumi config set {key} "):
        load_config({k: v for k, v in values.items() if v is not None})


def test_defaults_and_namespaced_keys() -> None:
    cfg = load_config({f"{NAMESPACE}:{k}": v for k, v in REQUIRED.items()})
    assert cfg == BootstrapConfig(
        project="my-gcp-project",
        github_repository="my-org/vertex-training",
        billing_account="012345-6789AB-CDEF01",
        region="us-central1",
        deploy_stack="dev",
        pool_id="github",
        provider_id="github-actions",
        state_bucket="my-gcp-project-pulumi-state",
    )


def test_project_files() -> None:
    project = yaml.safe_load((BOOTSTRAP / "Pulumi.yaml").read_text())
    assert project["name"] == NAMESPACE and project["runtime"]["name"] == "python"
    venv = (BOOTSTRAP / project["runtime"]["options"]["virtualenv"]).resolve()
    assert venv == (BOOTSTRAP.parents[1] / ".venv").resolve()
    example = yaml.safe_load((BOOTSTRAP / "Pulumi.example.yaml").read_text())["config"]
    cfg = load_config(example)
    assert cfg.github_repository_id == "123456789"


@pytest.mark.parametrize(("stack", "study"), [("dev", False), ("prod", False), ("dev", True)])
def test_ci_roles_cover_every_resource_the_main_stack_declares(stack: str, study: bool) -> None:
    """A new resource type or project grant in the main stack fails here until CI identities can handle it."""
    from tests.stack.conftest import run_stack, stack_config

    tuning = {"maxTrials": 2, "parameters": {"learningRate": {"values": [0.01, 0.001]}}}
    main = run_stack(stack, **({"tuning": tuning} if study else {}))
    types = {r.type for r in main.resources if r.custom and not r.type.startswith("pulumi:providers:")}
    types -= roles.LOCAL_TYPES
    deploy_roles = set(roles.DEPLOY_PROJECT_ROLES) | set(roles.DEPLOY_BILLING_ROLES)
    preview_roles = set(roles.PREVIEW_PROJECT_ROLES) | set(roles.PREVIEW_BILLING_ROLES)
    assert types <= set(roles.DEPLOY_ROLE_FOR_TYPE), "types the deploy identity has no role for"
    deploy_roles |= {*roles.STACK_ACCOUNT_ROLES, *roles.GUARD_ACCOUNT_ROLES}
    assert types <= set(roles.PREVIEW_ROLE_FOR_TYPE), "types the preview identity cannot refresh"
    assert {roles.DEPLOY_ROLE_FOR_TYPE[t] for t in types} <= deploy_roles
    assert {roles.PREVIEW_ROLE_FOR_TYPE[t] for t in types} <= preview_roles
    project = stack_config(stack).gcp_project
    granted = {r.inputs["role"] for r in main.by_type(PROJECT_MEMBER)}
    assert granted <= set(roles.grantable_project_roles(project))
