"""From what a Pulumi program declares (mock registrations, or CrossGuard's view of a preview) to a Program.

A declared resource is anything with `resource_type`, `name`, `urn`, `props` and `property_dependencies`
(property -> URNs it came from), as pulumi_policy.PolicyResource has them. Dependencies resolve values a
first preview does not know yet (a new account's email), so the same checks hold before anything exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from infra.least_privilege import custom_roles
from infra.least_privilege.google_roles import GoogleRoles
from infra.least_privilege.google_roles import load as load_google_roles
from infra.least_privilege.rules import Grant, Program, documented_exceptions, violations

ACCOUNT = "gcp:serviceaccount/account:Account"
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
PROJECT_GRANT = "gcp:projects/iAMMember:IAMMember"
ACCOUNT_GRANT = "gcp:serviceaccount/iAMMember:IAMMember"
BILLING_GRANT = "gcp:billing/accountIamMember:AccountIamMember"
# The CI identities the bootstrap creates: they deploy and preview; every other account of a program is one
# that workloads (jobs, trials, builds, the kill switch) run as.
DEPLOY_ACCOUNT_ID = "vt-ci-deploy"
CI_ACCOUNT_IDS = frozenset({"vt-ci-preview", DEPLOY_ACCOUNT_ID})
SERVICE_IDENTITY = "gcp:projects/serviceIdentity:ServiceIdentity"
# The bootstrap's Pulumi project (infra/bootstrap/Pulumi.yaml): run by an owner, once per project.
OWNER_RUN_PROJECT = "vertex-training-bootstrap"


class Declared(Protocol):
    resource_type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    property_dependencies: Mapping[str, Iterable[Any]]


@dataclass(frozen=True)
class Resource:
    """A plain declared resource (tests build these from mock registrations)."""

    resource_type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    property_dependencies: Mapping[str, Iterable[Any]] = field(default_factory=dict)


def _urns(resource: Declared, prop: str) -> list[str]:
    return [getattr(d, "urn", d) for d in (resource.property_dependencies or {}).get(prop, [])]


# How the engine spells a value a preview does not know yet (CrossGuard may pass it through as this string).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def _text(value: Any) -> str:
    return value if isinstance(value, str) and value != UNKNOWN else ""


def account_email(account: Declared) -> str:
    props = account.props
    return (
        _text(props.get("email"))
        or f"{props.get('accountId')}@{props.get('project')}.iam.gserviceaccount.com"
    )


def program(resources: Iterable[Declared]) -> Program:
    resources = list(resources)
    accounts = {r.urn: r for r in resources if r.resource_type == ACCOUNT}
    emails = {urn: account_email(a) for urn, a in accounts.items()}
    own_names = {a.name for a in accounts.values()} | {
        f"projects/{a.props.get('project')}/serviceAccounts/{e}"
        for a, e in zip(accounts.values(), emails.values(), strict=True)
    }

    agents = {r.urn: r for r in resources if r.resource_type == SERVICE_IDENTITY}

    def member(resource: Declared) -> str:
        known = _text(resource.props.get("member"))
        if known:
            return known
        for urn in _urns(resource, "member"):
            if urn in accounts:
                return f"serviceAccount:{emails[urn]}"
            if urn in agents:  # the agent's email needs the project number, unknown before the first up
                short = _text(agents[urn].props.get("service")).split(".")[0]
                return f"serviceAccount:service-0@gcp-sa-{short}.iam.gserviceaccount.com"
        return ""

    def own_account(resource: Declared) -> bool:
        target = _text(resource.props.get("serviceAccountId"))
        if target:
            return target in own_names or target.split("/")[-1] in set(emails.values())
        return any(u in accounts for u in _urns(resource, "serviceAccountId"))

    grants = []
    for r in resources:
        if "role" not in r.props or ("member" not in r.props and not _urns(r, "member")):
            continue
        scope = {PROJECT_GRANT: "project", ACCOUNT_GRANT: "account", BILLING_GRANT: "billing"}.get(
            r.resource_type, "resource"
        )
        condition = r.props.get("condition") or {}
        grants.append(
            Grant(
                resource=r.name,
                role=_text(r.props.get("role")),
                member=member(r),
                scope=scope,
                condition=_text(condition.get("expression")) if isinstance(condition, Mapping) else "",
                own_account=scope == "account" and own_account(r),
            )
        )
    declared_roles = {
        _text(r.props.get("roleId")): frozenset(r.props.get("permissions") or [])
        for r in resources
        if r.resource_type == CUSTOM_ROLE
    }
    workloads = frozenset(
        f"serviceAccount:{emails[urn]}"
        for urn, a in accounts.items()
        if a.props.get("accountId") not in CI_ACCOUNT_IDS
    )
    deployers = frozenset(
        f"serviceAccount:{emails[urn]}"
        for urn, a in accounts.items()
        if a.props.get("accountId") == DEPLOY_ACCOUNT_ID
    )
    return Program(
        grants=tuple(grants),
        # A main stack grants the bootstrap's roles: their permissions come from the one shared definition.
        custom_roles={**{c.role_id: frozenset(c.permissions) for c in custom_roles.ALL}, **declared_roles},
        workloads=workloads,
        deployers=deployers,
        owner_run=any(_project_of(r.urn) == OWNER_RUN_PROJECT for r in resources),
    )


def _project_of(urn: str) -> str:
    """The Pulumi project in "urn:pulumi:<stack>::<project>::<type>::<name>"."""
    parts = urn.split("::")
    return parts[1] if len(parts) > 2 else ""


def check(resources: Iterable[Declared], google: GoogleRoles | None = None) -> dict[str, list[str]]:
    """Every rule's findings for a program's declared resources."""
    return violations(program(resources), google or load_google_roles())


def exceptions(resources: Iterable[Declared], google: GoogleRoles | None = None) -> list[str]:
    """Findings accepted as documented residual risk: reported, never counted as passing silently."""
    return documented_exceptions(program(resources), google or load_google_roles())


def validate_stack(args: Any, report_violation: Any) -> None:
    """CrossGuard stack validator (pulumi_policy.StackValidationPolicy): one violation per finding."""
    for rule, found in check(args.resources).items():
        for message in found:
            report_violation(f"[{rule}] {message}")


def report_exceptions(args: Any, report_violation: Any) -> None:
    """CrossGuard validator of an advisory policy: each documented residual risk, shown on every preview."""
    for message in exceptions(args.resources):
        report_violation(f"[documented residual risk] {message}")
