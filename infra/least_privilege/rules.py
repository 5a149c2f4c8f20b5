"""The rules: each takes a Program (every IAM grant and custom role a stack declares) and returns violations.

Sources (read 2026-11-25): Google's role contents from the pinned iam-dataset subset (google_roles.json);
"Best practices for using service accounts" (https://cloud.google.com/iam/docs/best-practices-service-accounts:
grant act-as on the account, not the project); IAM Conditions accept resource names only for the services
listed in https://cloud.google.com/iam/docs/conditions-attribute-reference#resource-name, and IAM (service
accounts) is not one of them: a project grant "conditioned" on an account's name does not narrow act-as, so
only grants on the account itself count as limited to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from infra.least_privilege.google_roles import GoogleRoles

# Permissions that let a principal become, or give others, a service account.
ACCOUNT_POWERS = frozenset(
    {
        "iam.serviceAccounts.actAs",
        "iam.serviceAccounts.getAccessToken",
        "iam.serviceAccounts.getOpenIdToken",
        "iam.serviceAccounts.implicitDelegation",
        "iam.serviceAccounts.signBlob",
        "iam.serviceAccounts.signJwt",
        "iam.serviceAccounts.setIamPolicy",
        "iam.serviceAccountKeys.create",
        # An API key bound to the account authenticates as it (roles/iam.serviceAccountAdmin holds this).
        "iam.serviceAccountApiKeyBindings.create",
    }
)
PROJECT_SET_IAM = "resourcemanager.projects.setIamPolicy"
# What google_roles.json keeps of each role (the extraction used the same pattern).
RELEVANT = re.compile(
    r"^(iam\.serviceAccounts\.(actAs|getAccessToken|getOpenIdToken|signBlob|signJwt|implicitDelegation|"
    r"setIamPolicy)|iam\.serviceAccountKeys\.create|iam\.serviceAccountApiKeyBindings\.create|resourcemanager\.projects\.setIamPolicy|"
    r"aiplatform\.[A-Za-z]+\.(create|deploy))$"
)
# Vertex AI collections whose create writes records (TensorBoard data, ML metadata) and starts no compute.
RECORD_COLLECTIONS = frozenset(
    {
        "tensorboardExperiments",
        "tensorboardRuns",
        "tensorboardTimeSeries",
        "metadataStores",
        "contexts",
        "artifacts",
        "executions",
    }
)
# Vertex AI runs the code of a CustomJob, tuning job or custom TrainingPipeline created without a service
# account as the project's Custom Code Service Agent ("Training containers" in
# https://cloud.google.com/vertex-ai/docs/general/custom-service-account, read 2026-11-25).
# That agent's role holds getAccessToken, getOpenIdToken, signBlob, signJwt and implicitDelegation on every
# account of the project (google_roles.json): whoever may create such a job reaches those powers through it.
DEFAULT_JOB_IDENTITY_ROLE = "roles/aiplatform.customCodeServiceAgent"
JOB_CREATE = frozenset(
    {
        "aiplatform.customJobs.create",
        "aiplatform.hyperparameterTuningJobs.create",
        "aiplatform.pipelineJobs.create",
        "aiplatform.trainingPipelines.create",
    }
)
DEFAULT_JOB_IDENTITY_RULE = "no reach through Vertex AI's default job identity"
# Where the one accepted case (the deploy identity's, which must submit jobs) is stated as residual risk.
RESIDUAL_RISK = "docs/ci.md#residual-risk"
# A Google-managed service agent (https://cloud.google.com/iam/docs/service-agents): "service-<number>@gcp-sa-
# <service>.iam.gserviceaccount.com", whose own role is roles/<service>.serviceAgent.
_AGENT = re.compile(r"^serviceAccount:service-\d+@gcp-sa-([a-z0-9-]+)\.iam\.gserviceaccount\.com$")
_CUSTOM_ROLE = re.compile(r"^projects/[^/]+/roles/([A-Za-z0-9_.]+)$")
_GRANTABLE = re.compile(r"modifiedGrantsByRole'\s*,\s*\[\]\)\.hasOnly\(\[([^\]]*)\]\)")


@dataclass(frozen=True)
class Grant:
    resource: str  # the Pulumi resource name, for messages
    role: str
    member: str  # "serviceAccount:<email>", a principal set, ...; "" when not known (a first preview)
    scope: str  # "project", "account" (on one service account), "billing" or "resource"
    condition: str = ""
    own_account: bool = False  # scope "account": the account is one this program declares


@dataclass(frozen=True)
class Program:
    grants: tuple[Grant, ...]
    custom_roles: dict[str, frozenset[str]]  # role id -> permissions (declared here or by the bootstrap)
    workloads: frozenset[str] = field(default_factory=frozenset)  # members of the accounts jobs run as
    owner_run: bool = False  # the bootstrap: run once by a project owner, never by a CI identity
    deployers: frozenset[str] = field(default_factory=frozenset)  # members of the CI deploy identity


def agent_own_role(grant: Grant) -> bool:
    """A service agent granted its own service-agent role (what Google grants it when the service starts)."""
    match = _AGENT.match(grant.member)
    return match is not None and grant.role == f"roles/{match.group(1)}.serviceAgent"


def starts_work(permission: str) -> bool:
    """A Vertex AI permission that creates or deploys something that runs (and bills), not a record."""
    parts = permission.split(".")
    return (
        len(parts) == 3
        and parts[0] == "aiplatform"
        and parts[2] in ("create", "deploy")
        and parts[1] not in RECORD_COLLECTIONS
    )


def custom_role_id(role: str) -> str | None:
    match = _CUSTOM_ROLE.match(role)
    return match.group(1) if match else None


def role_permissions(program: Program, google: GoogleRoles, role: str) -> frozenset[str]:
    """The role's permissions the rules reason about (all of a custom role's)."""
    custom = custom_role_id(role)
    if custom is not None:
        return program.custom_roles.get(custom, frozenset())
    return google.relevant(role)


def grantable_roles(condition: str) -> list[str] | None:
    """The roles a conditional projectIamAdmin may grant, or None when the condition does not limit them."""
    match = _GRANTABLE.search(condition or "")
    if match is None:
        return None
    return re.findall(r"'([^']+)'", match.group(1))


def unknown_roles(program: Program, google: GoogleRoles) -> list[str]:
    """Every granted (or grantable) role is a predefined role of Google's or a custom role of the project."""
    found = []
    for grant in program.grants:
        for role in [grant.role, *(grantable_roles(grant.condition) or [])]:
            custom = custom_role_id(role)
            known = custom in program.custom_roles if custom is not None else google.exists(role)
            if not known:
                found.append(
                    f"{grant.resource}: role {role} is not a predefined role of Google's nor a custom role"
                )
    return found


def unknown_permissions(program: Program, google: GoogleRoles) -> list[str]:
    """Every custom-role permission is one Google's predefined roles hold: IAM refuses a custom role with a
    permission it does not know, and no exception is kept."""
    return [
        f"custom role {role_id}: permission {permission} is held by no predefined role of Google's"
        for role_id, permissions in sorted(program.custom_roles.items())
        for permission in sorted(permissions)
        if not google.is_real(permission)
    ]


def reach_beyond_own_accounts(program: Program, google: GoogleRoles) -> list[str]:
    """No grant gives act-as, token, key or setIamPolicy power over accounts this program does not own."""
    found = []
    for grant in program.grants:
        held = role_permissions(program, google, grant.role)
        who = grant.member or "(member not known yet)"
        if grant.scope == "account":
            if held & ACCOUNT_POWERS and not grant.own_account:
                found.append(
                    f"{grant.resource}: {who} holds {grant.role} on a service account this stack does not own"
                )
        elif grant.scope == "project":
            # Only an owner grants a service agent its own role (the bootstrap); a stack never does.
            if program.owner_run and agent_own_role(grant):
                continue
            if powers := sorted(held & ACCOUNT_POWERS):
                found.append(
                    f"{grant.resource}: {who} holds {', '.join(powers)} on every service account of the "
                    f"project through {grant.role}; grant it on the stack's accounts instead"
                )
            if PROJECT_SET_IAM in held:
                found.extend(_grant_paths(program, google, grant))
    return found


def _grant_paths(program: Program, google: GoogleRoles, grant: Grant) -> list[str]:
    grantable = grantable_roles(grant.condition)
    if grantable is None:
        return [f"{grant.resource}: {grant.role} without a modifiedGrantsByRole condition can grant any role"]
    found = []
    for role in grantable:
        if reach := sorted(role_permissions(program, google, role) & (ACCOUNT_POWERS | {PROJECT_SET_IAM})):
            found.append(f"{grant.resource}: {grant.role} may grant {role}, which carries {', '.join(reach)}")
    return found


def workloads_start_work(program: Program, google: GoogleRoles) -> list[str]:
    """No account a job, a trial or the kill switch runs as can start Vertex AI work it cannot see.

    Nor may the deploy identity grant a role that can: it grants project roles to those accounts.
    """
    found = []
    for grant in program.grants:
        if grant.scope != "project":
            continue
        if grant.member in program.workloads and (work := _work(program, google, grant.role)):
            found.append(
                f"{grant.resource}: workload {grant.member} can start work through {grant.role} ({work})"
            )
        for role in grantable_roles(grant.condition) or []:
            if work := _work(program, google, role):
                found.append(f"{grant.resource}: {grant.role} may grant {role} to the workloads ({work})")
    return found


def _work(program: Program, google: GoogleRoles, role: str) -> str:
    """The work-starting permissions of `role`, a few named."""
    work = sorted(p for p in role_permissions(program, google, role) if starts_work(p))
    return ", ".join(work[:4]) + (f" and {len(work) - 4} more" if len(work) > 4 else "")


def _default_job_identity_paths(program: Program, google: GoogleRoles) -> list[tuple[Grant, str]]:
    """Project grants that may create a job Vertex AI runs as its Custom Code Service Agent, explained."""
    agent = sorted(google.relevant(DEFAULT_JOB_IDENTITY_ROLE) & ACCOUNT_POWERS)
    if not agent:
        return []
    paths = []
    for grant in program.grants:
        if grant.scope != "project" or agent_own_role(grant):
            continue
        if creates := sorted(role_permissions(program, google, grant.role) & JOB_CREATE):
            who = grant.member or "(member not known yet)"
            paths.append(
                (
                    grant,
                    f"{grant.resource}: {who} may create a job with no service account ({', '.join(creates)} "
                    f"through {grant.role}); Vertex AI runs it as its Custom Code Service Agent, whose "
                    f"{DEFAULT_JOB_IDENTITY_ROLE} holds {', '.join(agent)} on every account of the project",
                )
            )
    return paths


def _accepted(program: Program, grant: Grant) -> bool:
    """The deploy identity's own grant, declared by the owner-run bootstrap: documented residual risk."""
    return program.owner_run and grant.member in program.deployers


def reach_through_default_job_identity(program: Program, google: GoogleRoles) -> list[str]:
    """No identity may start a job that runs as Vertex AI's token-minting agent, but the documented one."""
    paths = _default_job_identity_paths(program, google)
    return [message for grant, message in paths if not _accepted(program, grant)]


def documented_exceptions(program: Program, google: GoogleRoles) -> list[str]:
    """Findings accepted as residual risk (reported, never silently passed): the deploy identity's job path.

    The bootstrap adds no deny policy for it: one on the agent would cover the stack's own job account too,
    which Vertex AI may need those permissions on to run jobs as it (unverified without a cloud project).
    """
    paths = _default_job_identity_paths(program, google)
    return [
        f"{message}: accepted, see {RESIDUAL_RISK}" for grant, message in paths if _accepted(program, grant)
    ]


def violations(program: Program, google: GoogleRoles) -> dict[str, list[str]]:
    """Every rule's findings, by rule name (empty lists when the program passes)."""
    return {
        "roles exist": unknown_roles(program, google),
        "custom-role permissions are real": unknown_permissions(program, google),
        "no reach beyond the stack's own accounts": reach_beyond_own_accounts(program, google),
        "workloads cannot start work": workloads_start_work(program, google),
        "no reach through Vertex AI's default job identity": reach_through_default_job_identity(
            program, google
        ),
    }
