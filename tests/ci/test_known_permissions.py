"""Every permission the code names is one Google's IAM knows: held by a predefined role in Google's role data
(infra/least_privilege/google_roles.json, cut from iam-dataset at a pinned commit). No exception list.

IAM refuses to create a custom role with a permission it does not know, and projects.testIamPermissions
answers an unknown permission with an error for the whole request (googleapis/google-cloud-java#722): one
such name in a custom role stops the bootstrap, and one in preflight's lists turns a whole line into "cannot
tell". The names are read from the code itself (every string constant shaped like a permission in infra/
and policy/), so a permission added anywhere is checked without being listed here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from infra.bootstrap import roles
from infra.least_privilege import custom_roles, google_roles
from infra.preflight import permissions as up

ROOT = Path(__file__).resolve().parents[2]
PERMISSION = re.compile(r"[a-z][a-z0-9]*\.[a-z][a-zA-Z0-9]*\.[a-z][a-zA-Z0-9]*")


def named_in_code() -> set[str]:
    """Every string constant of infra/ and policy/ shaped service.resource.verb (host names excluded)."""
    found = set()
    for folder in ("infra", "policy"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                value = node.value if isinstance(node, ast.Constant) else None
                if isinstance(value, str) and PERMISSION.fullmatch(value) and not value.endswith(".com"):
                    found.add(value)
    return found


def named_by_lists() -> set[str]:
    """The permissions of the code's own lists: preflight's, the custom roles', the bootstrap's."""
    preflight = set().union(*(c.permissions for c in up.DEPLOY_CALLS.values()))
    preflight |= set().union(*(c.permissions for c in up.ACCOUNT_CALLS.values()))
    preflight |= set(up.GRANTED_BY) | set(up.PREFLIGHT_READS) | set(up.BILLING_PERMISSIONS)
    return preflight | {p for role in custom_roles.ALL for p in role.permissions}


def named() -> set[str]:
    """What the code names as a literal, and what its lists hold (some built from the one table of job kinds,
    infra/guard/job_kinds.py, and never written out)."""
    return named_in_code() | named_by_lists()


def test_the_scan_and_the_lists_see_the_names() -> None:
    """The scan guards literals anywhere; the lists, names built from tables (the job kinds' verbs)."""
    assert "aiplatform.customJobs.create" in named_in_code()
    assert "aiplatform.batchPredictionJobs.cancel" in named_by_lists()
    assert all(PERMISSION.fullmatch(p) for p in named_by_lists())


@pytest.mark.parametrize("permission", sorted(named()))
def test_every_permission_named_is_held_by_a_predefined_role(permission: str) -> None:
    google = google_roles.load()
    assert google.is_real(permission), (
        f"{permission} is held by no predefined role in Google's role data "
        f"({google.source['dataset']} at {google.source['commit']}): IAM may not know it"
    )


def test_the_data_keeps_no_exception_list() -> None:
    raw = google_roles.DATA.read_text()
    assert "unverified" not in raw
    assert all(role for role in google_roles.load().permissions.values())


def test_every_role_the_bootstrap_grants_is_googles_or_its_own() -> None:
    google = google_roles.load()
    own = {role.role_id for role in custom_roles.ALL}
    granted = {
        *roles.PREVIEW_PROJECT_ROLES,
        *roles.PREVIEW_BILLING_ROLES,
        *roles.DEPLOY_PROJECT_ROLES,
        *roles.DEPLOY_BILLING_ROLES,
        *roles.STACK_ACCOUNT_ROLES,
        *roles.GUARD_ACCOUNT_ROLES,
        *roles.AGENT_ROLES.values(),
        *roles.DEPLOY_ROLE_FOR_TYPE.values(),
        *roles.PREVIEW_ROLE_FOR_TYPE.values(),
    }
    assert {r for r in granted if not google.exists(r)} <= own


def test_a_permission_iam_does_not_check_is_named_nowhere() -> None:
    """services.generateServiceIdentity: no predefined role holds it, roles/owner included; the bootstrap
    deletes the custom role that held it (infra/bootstrap/retired.py)."""
    assert "serviceusage.services.generateServiceIdentity" not in named_in_code()
    assert "vertexTrainingDeploy" not in {role.role_id for role in custom_roles.ALL}
