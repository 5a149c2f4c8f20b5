"""Every IAM grant and custom role of the dev, prod and bootstrap stacks against Google's own role list.

Role contents come from a pinned subset of the public iam-dataset (github.com/iann0036/iam-dataset, gcp/roles,
commit 2073fa52ac008a45477aa0b1b4580cd99135bf60 of 2026-08-22, read 2026-11-25: infra/least_privilege/
google_roles.json). The same rules run as a CrossGuard policy pack on `pulumi preview` (policy/).
Each rule is shown to fail on the grants this project made before issue 27 (rebuilt here as additions to
today's programs), so a regression cannot pass silently.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from infra.bootstrap import roles
from infra.least_privilege import custom_roles, google_roles
from infra.least_privilege.declared import (
    Resource,
    check,
    exceptions,
    program,
    report_exceptions,
    validate_stack,
)
from infra.least_privilege.rules import (
    ACCOUNT_POWERS,
    DEFAULT_JOB_IDENTITY_ROLE,
    DEFAULT_JOB_IDENTITY_RULE,
    JOB_CREATE,
    RELEVANT,
    RESIDUAL_RISK,
    starts_work,
)
from infra.stack import build
from tests.ci.test_bootstrap import run_bootstrap
from tests.fakes.pulumi_mocks import MockedRun, Registered, run_program
from tests.stack.conftest import cached_run, stack_config

RULES = (
    "roles exist",
    "custom-role permissions are real",
    "no reach beyond the stack's own accounts",
    "workloads cannot start work",
    DEFAULT_JOB_IDENTITY_RULE,
)
DEPLOYER = "serviceAccount:vt-ci-deploy@my-gcp-project.iam.gserviceaccount.com"
PROJECT_GRANT = "gcp:projects/iAMMember:IAMMember"
ACCOUNT_GRANT = "gcp:serviceaccount/iAMMember:IAMMember"


def declared(run: MockedRun) -> list[Resource]:
    return [
        Resource(r.type, r.name, r.urn, r.inputs, r.property_dependencies) for r in run.resources if r.custom
    ]


_BOOTSTRAP: list[MockedRun] = []


def stack_run(name: str) -> MockedRun:
    if name != "bootstrap":
        return cached_run(name)
    if not _BOOTSTRAP:
        _BOOTSTRAP.append(run_bootstrap())
    return _BOOTSTRAP[0]


def grant(
    name: str, role: str, member: str, *, urn_project: str = "vertex-training", **props: object
) -> Resource:
    typ = props.pop("type", PROJECT_GRANT)
    return Resource(
        str(typ),
        name,
        f"urn:pulumi:x::{urn_project}::{typ}::{name}",
        {"role": role, "member": member, **props},
    )


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("stack", ["dev", "prod", "bootstrap"])
def test_every_stack_passes_every_rule(stack: str, rule: str) -> None:
    assert check(declared(stack_run(stack)))[rule] == []


def test_a_study_passes_too() -> None:
    from tests.stack.conftest import run_stack

    tuning = {"maxTrials": 2, "parameters": {"learningRate": {"values": [0.01, 0.001]}}}
    assert not any(check(declared(run_stack("dev", tuning=tuning))).values())


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_first_preview_is_checked_too(stack: str) -> None:
    """Before anything exists, members are unknown: they resolve through the accounts they come from."""
    cfg = stack_config(stack)
    run = run_program(lambda: build(cfg), project="vertex-training", stack=stack, preview=True)
    resources = declared(run)
    checked = program(resources)
    job = f"serviceAccount:vt-{stack}-job@{cfg.gcp_project}.iam.gserviceaccount.com"
    assert job in checked.workloads
    assert {g.member for g in checked.grants if g.resource.startswith("job-")} == {job}
    assert not any(check(resources).values())
    # aiplatform.user given to the job account whose email is not known yet is still caught.
    (account,) = [r for r in resources if r.name == "job-sa"]
    unknown = Resource(
        PROJECT_GRANT,
        "job-user",
        "urn:x::vertex-training::t::job-user",
        {"role": "roles/aiplatform.user", "member": None},
        {"member": [account.urn]},
    )
    assert check([*resources, unknown])["workloads cannot start work"]


# What the stacks granted before issue 27, rebuilt as additions to today's programs: each rule must fail.
def test_act_as_on_the_project_fails() -> None:
    before = [
        grant("deploy-iam-serviceaccountuser", "roles/iam.serviceAccountUser", DEPLOYER, urn_project="b"),
        grant("deploy-iam-serviceaccountadmin", "roles/iam.serviceAccountAdmin", DEPLOYER, urn_project="b"),
    ]
    found = check([*declared(stack_run("bootstrap")), *before])["no reach beyond the stack's own accounts"]
    assert len(found) == 2
    assert "iam.serviceAccounts.actAs on every service account" in found[0]
    assert "iam.serviceAccounts.setIamPolicy" in found[1]


def test_a_grantable_token_role_fails() -> None:
    """The old condition let the deploy identity grant roles/eventarc.serviceAgent (actAs, getAccessToken)."""
    old = [
        *roles.grantable_project_roles("my-gcp-project"),
        "roles/eventarc.serviceAgent",
        "roles/aiplatform.user",
    ]
    admin = grant(
        "deploy-admin",
        "roles/resourcemanager.projectIamAdmin",
        DEPLOYER,
        condition={"title": "t", "expression": roles.grant_condition(old)},
    )
    found = check([*declared(stack_run("bootstrap")), admin])
    assert any(
        "may grant roles/eventarc.serviceAgent" in f
        for f in found["no reach beyond the stack's own accounts"]
    )
    assert any("may grant roles/aiplatform.user" in f for f in found["workloads cannot start work"])
    unconditioned = grant("deploy-any", "roles/resourcemanager.projectIamAdmin", DEPLOYER)
    assert any(
        "can grant any role" in f for f in check([unconditioned])["no reach beyond the stack's own accounts"]
    )


def test_a_stack_granting_a_service_agent_role_fails_the_bootstrap_may() -> None:
    agent = "serviceAccount:service-123456789012@gcp-sa-eventarc.iam.gserviceaccount.com"
    by_stack = grant("eventarc-agent-role", "roles/eventarc.serviceAgent", agent)
    assert check([*declared(cached_run("dev")), by_stack])["no reach beyond the stack's own accounts"]
    by_owner = grant(
        "eventarc-agent-role", "roles/eventarc.serviceAgent", agent, urn_project="vertex-training-bootstrap"
    )
    assert not check([by_owner])["no reach beyond the stack's own accounts"]


def test_a_grant_on_an_account_the_stack_does_not_own_fails() -> None:
    compute = grant(
        "on-compute-default",
        "roles/iam.serviceAccountUser",
        DEPLOYER,
        type=ACCOUNT_GRANT,
        serviceAccountId="projects/my-gcp-project/serviceAccounts/123-compute@developer.gserviceaccount.com",
    )
    found = check([*declared(stack_run("bootstrap")), compute])["no reach beyond the stack's own accounts"]
    assert found == [
        f"on-compute-default: {DEPLOYER} holds roles/iam.serviceAccountUser on a service account "
        "this stack does not own"
    ]


def test_aiplatform_user_for_the_job_fails() -> None:
    """What prod granted for TensorBoard uploads: jobs could start jobs the kill switch never sees."""
    job = "serviceAccount:vt-prod-job@acme-vt-prod.iam.gserviceaccount.com"
    found = check([*declared(cached_run("prod")), grant("job-aiplatform-user", "roles/aiplatform.user", job)])
    (message,) = found["workloads cannot start work"]
    assert "aiplatform.agentAnomalyDetectionScopes.create" in message or "customJobs.create" in message


def test_an_unknown_role_and_an_unknown_permission_fail() -> None:
    job = "serviceAccount:vt-dev-job@acme-vt-dev.iam.gserviceaccount.com"
    typo = grant("typo", "roles/aiplatform.usr", job)
    made_up = Resource(
        "gcp:projects/iAMCustomRole:IAMCustomRole",
        "r",
        "urn:x::p::t::r",
        {"roleId": "vertexTrainingKillSwitch", "permissions": ["aiplatform.customJobs.cancle"]},
    )
    missing = grant("missing", "projects/acme-vt-dev/roles/vertexTrainingNothing", job)
    found = check([*declared(cached_run("dev")), typo, made_up, missing])
    assert found["roles exist"] == [
        "typo: role roles/aiplatform.usr is not a predefined role of Google's nor a custom role",
        "missing: role projects/acme-vt-dev/roles/vertexTrainingNothing is not a predefined role of "
        "Google's nor a custom role",
    ]
    assert found["custom-role permissions are real"] == [
        "custom role vertexTrainingKillSwitch: permission aiplatform.customJobs.cancle is held by no "
        "predefined role of Google's"
    ]


def test_the_custom_roles_hold_only_real_permissions_and_start_no_work() -> None:
    google = google_roles.load()
    for role in custom_roles.ALL:
        for permission in role.permissions:
            assert google.is_real(permission), permission
        assert not set(role.permissions) & ACCOUNT_POWERS
        assert not [p for p in role.permissions if starts_work(p)]


def test_the_pinned_data_says_where_it_comes_from() -> None:
    google = google_roles.load()
    assert google.source["dataset"] == "https://github.com/iann0036/iam-dataset"
    assert google.source["commit"] == "2073fa52ac008a45477aa0b1b4580cd99135bf60"
    assert {"iam.serviceAccounts.actAs"} <= google.relevant("roles/iam.serviceAccountUser")
    assert "aiplatform.customJobs.create" in google.relevant("roles/aiplatform.user")
    assert not google.relevant("roles/aiplatform.viewer")
    # The subset was cut with the rules' own pattern: nothing else is kept, so nothing else can be relied on.
    assert all(RELEVANT.match(p) for role in google.roles for p in google.relevant(role))


def test_the_policy_pack_validator_reports_each_finding() -> None:
    """validate_stack as CrossGuard calls it: resources with property dependencies as resource objects."""
    job_account = SimpleNamespace(
        resource_type="gcp:serviceaccount/account:Account",
        name="job-sa",
        urn="urn:x::vertex-training::a::job-sa",
        props={"accountId": "vt-dev-job", "project": "p"},
        property_dependencies={},
    )
    user = SimpleNamespace(
        resource_type=PROJECT_GRANT,
        name="job-user",
        urn="urn:x::vertex-training::g::job-user",
        props={"role": "roles/aiplatform.user", "member": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"},
        property_dependencies={"member": [job_account]},
    )
    reported: list[str] = []
    validate_stack(SimpleNamespace(resources=[job_account, user]), reported.append)
    assert len(reported) == 2 and reported[0].startswith(
        "[workloads cannot start work] job-user: workload serviceAccount:vt-dev-job@p.iam.gserviceaccount.com"
    )
    assert reported[1].startswith(f"[{DEFAULT_JOB_IDENTITY_RULE}] job-user: ")
    reported.clear()
    validate_stack(SimpleNamespace(resources=[job_account]), reported.append)
    assert reported == []


def test_registered_resources_carry_their_property_dependencies() -> None:
    run = stack_run("bootstrap")
    (binding,) = [r for r in run.by_type(ACCOUNT_GRANT) if r.name == "deploy-federated"]
    assert isinstance(binding, Registered) and binding.property_dependencies["serviceAccountId"]


# Issue: the deploy identity's roles/aiplatform.user lets it submit a job with no service account, which
# Vertex AI runs as its Custom Code Service Agent (token permissions on every account of the project).
def test_the_custom_code_agent_holds_token_powers_in_the_pinned_data() -> None:
    held = google_roles.load().relevant(DEFAULT_JOB_IDENTITY_ROLE)
    assert {
        "iam.serviceAccounts.getAccessToken",
        "iam.serviceAccounts.getOpenIdToken",
        "iam.serviceAccounts.signBlob",
        "iam.serviceAccounts.signJwt",
        "iam.serviceAccounts.implicitDelegation",
    } <= held
    assert google_roles.load().relevant("roles/aiplatform.user") >= JOB_CREATE


def test_the_deploy_identitys_job_path_is_reported_as_documented_residual_risk() -> None:
    """Not a silent pass: the bootstrap's deploy grant shows up as an accepted, documented exception."""
    accepted = exceptions(declared(stack_run("bootstrap")))
    assert len(accepted) == 1
    (message,) = accepted
    assert DEPLOYER in message and "roles/aiplatform.user" in message
    assert "getAccessToken" in message and message.endswith(f"accepted, see {RESIDUAL_RISK}")
    for stack in ("dev", "prod"):
        assert exceptions(declared(cached_run(stack))) == []
    reported: list[str] = []
    report_exceptions(SimpleNamespace(resources=declared(stack_run("bootstrap"))), reported.append)
    assert reported == [f"[documented residual risk] {message}"]


@pytest.mark.parametrize("role", ["roles/aiplatform.user", "roles/editor"])
def test_any_other_identity_that_can_create_jobs_fails(role: str) -> None:
    """Anyone else (a user, a stack's grant, the deploy identity granted it by a stack) is a violation."""
    someone = grant("ml-user", role, "user:alice@example.com", urn_project="vertex-training-bootstrap")
    found = check([*declared(stack_run("bootstrap")), someone])[DEFAULT_JOB_IDENTITY_RULE]
    assert len(found) == 1 and found[0].startswith("ml-user: user:alice@example.com may create a job")
    by_stack = grant("deploy-user", "roles/aiplatform.user", DEPLOYER)
    assert check([*declared(cached_run("dev")), by_stack])[DEFAULT_JOB_IDENTITY_RULE]
