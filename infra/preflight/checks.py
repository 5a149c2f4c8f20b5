"""One function per preflight item: each reads one thing, read-only, and returns a Result with its fix.

Google API errors a check does not expect end as "cannot tell" lines (`guarded`), never as a traceback.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import google.auth
from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions
from google.auth.transport.requests import Request
from google.cloud import billing_v1, cloudquotas_v1, iam_admin_v1, resourcemanager_v3, service_usage_v1

from infra.cloudbuild.regions import ALWAYS_OPEN_REGIONS, BUILD_REGIONS, LOCATIONS_URL
from infra.config import NAMESPACE
from infra.killswitch import PERMISSIONS as KILL_SWITCH_PERMISSIONS
from infra.killswitch import ROLE_DESCRIPTION, ROLE_ID, ROLE_TITLE, role_name
from infra.preflight.clients import CALL_TIMEOUT_SECONDS
from infra.preflight.demand import JobDemand, ShapeDemand
from infra.preflight.results import Result, cannot_tell, missing, ok
from infra.vertex.quotas import SERVICE as VERTEX_SERVICE
from infra.vertex.quotas import QuotaNeed, quota_info, region_value, request_command, request_url

ADC_LOGIN = "gcloud auth application-default login"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
# Service Usage's batchGet takes at most 30 services per call (services.batchGet reference).
BATCH_GET_LIMIT = 30
ANYONE = "user:<you@example.com>"


@dataclass(frozen=True)
class Caller:
    """Who the credentials are: an IAM member (None when the credentials do not say) and a description."""

    member: str | None
    description: str

    @property
    def member_or_placeholder(self) -> str:
        return self.member or ANYONE


def _set(key: str, value: str, stack: str) -> str:
    return f"pulumi config set {NAMESPACE}:{key} {value} --stack {stack}"


def _email_in(id_token: str | None) -> str | None:
    """The `email` claim of an OpenID Connect ID token (shown, not trusted: the APIs check the token)."""
    if not id_token or id_token.count(".") != 2:
        return None
    payload = id_token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError:
        return None
    return claims.get("email") if isinstance(claims, dict) else None


def identify(credentials: Any) -> Caller:
    """The member the credentials act as: a user's e-mail (ID token or ADC file), else a service account."""
    email = _email_in(getattr(credentials, "id_token", None)) or getattr(credentials, "account", "")
    if email:
        return Caller(f"user:{email}", f"user {email}")
    account = getattr(credentials, "service_account_email", None)
    if account and account != "default":
        return Caller(f"serviceAccount:{account}", f"service account {account}")
    return Caller(None, f"{type(credentials).__module__}.{type(credentials).__name__} (identity not shown)")


def credentials(project: str) -> tuple[Result, Caller | None]:
    """Application Default Credentials that can get a token, and who they are."""
    item = "credentials"
    try:
        found, _ = google.auth.default(scopes=[CLOUD_PLATFORM])
    except auth_exceptions.DefaultCredentialsError:
        return missing(item, "no Application Default Credentials found", ADC_LOGIN), None
    try:
        found.refresh(Request())
    except auth_exceptions.RefreshError as exc:
        return missing(item, f"Application Default Credentials cannot get a token ({exc})", ADC_LOGIN), None
    except auth_exceptions.TransportError as exc:
        return cannot_tell(item, f"could not reach Google's token endpoint ({exc})"), None
    caller = identify(found)
    quota = getattr(found, "quota_project_id", None)
    note = (
        f"quota project {quota}"
        if quota
        else f"no quota project (`gcloud auth application-default set-quota-project {project}` sets one)"
    )
    return ok(item, f"Application Default Credentials of {caller.description}; {note}"), caller


def guarded(item: str, check: Callable[[], Result]) -> Result:
    """`check()`, or "cannot tell" naming the Google API error it met."""
    try:
        return check()
    except gexc.GoogleAPIError as exc:  # a call's error, or retries of a transient one given up (RetryError)
        return cannot_tell(item, api_error(exc))


def api_error(exc: gexc.GoogleAPIError) -> str:
    """One line: the gRPC status (or the error's kind) and Google's message."""
    code = getattr(exc, "grpc_status_code", None)
    message = getattr(exc, "message", None) or str(exc)
    return f"{code.name if code else type(exc).__name__}: {' '.join(message.split())}"


def project(client: resourcemanager_v3.ProjectsClient, project_id: str, stack: str) -> Result:
    """The project exists and is active (Google answers PERMISSION_DENIED for one that does not exist)."""
    item = "project"
    try:
        found = client.get_project(name=f"projects/{project_id}", timeout=CALL_TIMEOUT_SECONDS)
    except (gexc.PermissionDenied, gexc.NotFound) as exc:
        return missing(
            item,
            f"{project_id} does not exist or you cannot see it ({exc.message})",
            f"gcloud projects create {project_id}, or {_set('gcpProject', '<project-id>', stack)} "
            "(yours: `gcloud projects list`)",
        )
    if found.state != resourcemanager_v3.Project.State.ACTIVE:
        return missing(item, f"{project_id} is {found.state.name}", f"gcloud projects undelete {project_id}")
    return ok(item, f"{project_id} ({found.name}) is active")


def billing(client: billing_v1.CloudBillingClient, project_id: str, account: str, stack: str) -> Result:
    """Billing is enabled on the project, through the billing account the stack's budget watches."""
    item = "billing"
    info = client.get_project_billing_info(name=f"projects/{project_id}", timeout=CALL_TIMEOUT_SECONDS)
    linked = info.billing_account_name.removeprefix("billingAccounts/")
    if not info.billing_enabled:
        return missing(
            item,
            f"billing is not enabled on {project_id}",
            f"gcloud billing projects link {project_id} --billing-account={account}",
        )
    if linked != account:
        return missing(
            item,
            f"{project_id} is billed to {linked}, but billingAccount is {account}: the budget would watch an "
            "account that never sees this project's spend",
            _set("billingAccount", linked, stack),
        )
    return ok(item, f"enabled on {project_id}, billed to {account}")


def project_permissions(
    client: resourcemanager_v3.ProjectsClient, project_id: str, needed: Mapping[str, str], caller: Caller
) -> tuple[Result, set[str]]:
    """testIamPermissions answers the subset of `needed` (permission -> granting role) the caller holds."""
    item = "permissions on the project"
    response = client.test_iam_permissions(
        resource=f"projects/{project_id}", permissions=sorted(needed), timeout=CALL_TIMEOUT_SECONDS
    )
    held = set(response.permissions)
    lacking = sorted(set(needed) - held)
    if not lacking:
        return ok(item, f"you hold all {len(needed)} that `pulumi up` needs on {project_id}"), held
    roles = sorted({needed[permission] for permission in lacking})
    grants = "; ".join(_grant(project_id, caller.member_or_placeholder, role) for role in roles)
    detail = f"not held: {len(lacking)} of the {len(needed)} that `pulumi up` needs: {', '.join(lacking)}"
    return missing(item, detail, f"{grants} (or the project's Owner, roles/owner, holds them all)"), held


def _grant(project_id: str, member: str, role: str) -> str:
    qualified = role if role.startswith("roles/") else f"projects/{project_id}/roles/{role}"
    return f"gcloud projects add-iam-policy-binding {project_id} --member={member} --role={qualified}"


def budget_rights(
    client: billing_v1.CloudBillingClient, account: str, needed: Iterable[str], caller: Caller, stack: str
) -> Result:
    """The caller may create budgets on the billing account (Billing Account Costs Manager holds that)."""
    item = "budget rights"
    wanted = sorted(needed)
    response = client.test_iam_permissions(
        resource=f"billingAccounts/{account}", permissions=wanted, timeout=CALL_TIMEOUT_SECONDS
    )
    lacking = sorted(set(wanted) - set(response.permissions))
    if not lacking:
        return ok(item, f"you may create budgets on billing account {account}")
    return missing(
        item,
        f"you lack {', '.join(lacking)} on billing account {account} (or it does not exist)",
        f"an administrator of the billing account runs: gcloud billing accounts add-iam-policy-binding "
        f"{account} "
        f"--member={caller.member_or_placeholder} --role=roles/billing.costsManager; or "
        f"{_set('billingAccount', '<an account you manage>', stack)} (`gcloud billing accounts list`)",
    )


def apis(
    client: service_usage_v1.ServiceUsageClient, project_id: str, required: list[str], may_enable: bool
) -> Result:
    """Which of the stack's APIs are off, and whether the caller may turn them on."""
    item = "APIs"
    states: dict[str, str] = {}
    for start in range(0, len(required), BATCH_GET_LIMIT):
        names = [f"projects/{project_id}/services/{s}" for s in required[start : start + BATCH_GET_LIMIT]]
        response = client.batch_get_services(
            request={"parent": f"projects/{project_id}", "names": names}, timeout=CALL_TIMEOUT_SECONDS
        )
        states |= {service.name.rsplit("/", 1)[-1]: service.state.name for service in response.services}
    off = [api for api in required if states.get(api) != "ENABLED"]
    if not off:
        return ok(item, f"all {len(required)} that the stack uses are enabled")
    who = (
        "you may enable them (serviceusage.services.enable), and `pulumi up` would"
        if may_enable
        else "you may not enable them (no serviceusage.services.enable): a project owner runs the fix"
    )
    return missing(
        item,
        f"{len(off)} of {len(required)} are off: {', '.join(off)}; {who}",
        f"gcloud services enable {' '.join(off)} --project={project_id}",
    )


def role_create_command(project_id: str) -> str:
    """The one-time command of docs/kill-switch.md that creates the shared kill-switch role."""
    return (
        f"gcloud iam roles create {ROLE_ID} --project={project_id} --stage=GA --title={ROLE_TITLE!r} "
        f"--description={ROLE_DESCRIPTION!r} --permissions={','.join(KILL_SWITCH_PERMISSIONS)}"
    )


def kill_switch_role(client: iam_admin_v1.IAMClient, project_id: str) -> Result:
    """The project's one kill-switch custom role exists, is not deleted and holds what the function calls."""
    item = "kill-switch role"
    name = role_name(project_id)
    try:
        role = client.get_role(request={"name": name}, timeout=CALL_TIMEOUT_SECONDS)
    except gexc.NotFound:
        return missing(item, f"{name} does not exist", role_create_command(project_id))
    except gexc.PermissionDenied as exc:
        return cannot_tell(
            item,
            f"cannot read {name} ({exc.message}); reading it needs iam.roles.get (roles/iam.roleViewer)",
            f"gcloud iam roles describe {ROLE_ID} --project={project_id}",
        )
    if role.deleted:
        return missing(
            item,
            f"{name} is deleted (IAM keeps its id for 37 days)",
            f"gcloud iam roles undelete {ROLE_ID} --project={project_id}",
        )
    lacking = sorted(set(KILL_SWITCH_PERMISSIONS) - set(role.included_permissions))
    if lacking:
        return missing(
            item,
            f"{name} lacks {', '.join(lacking)}",
            f"gcloud iam roles update {ROLE_ID} --project={project_id} --add-permissions={','.join(lacking)}",
        )
    return ok(item, f"{name} exists")


class QuotaUnreadable(Exception):
    """A quota value that could not be read, with the reason."""


class QuotaValues:
    """Vertex AI quota values per region, read once per quota id through Cloud Quotas."""

    def __init__(self, client: cloudquotas_v1.CloudQuotasClient, project_id: str) -> None:
        self.client = client
        self.project_id = project_id
        self._infos: dict[str, cloudquotas_v1.QuotaInfo | QuotaUnreadable] = {}

    def __call__(self, quota_id: str, region: str) -> int:
        if quota_id not in self._infos:
            try:
                self._infos[quota_id] = quota_info(self.client, self.project_id, quota_id)
            except gexc.GoogleAPIError as exc:
                self._infos[quota_id] = QuotaUnreadable(api_error(exc))
        found = self._infos[quota_id]
        if isinstance(found, QuotaUnreadable):
            raise found
        value = region_value(found, region)
        if value is None:
            raise QuotaUnreadable(f"Cloud Quotas publishes no value of it for {region}")
        return value


# How one shape stands: it fits; its quota is short (`up` skips it); short on a quota no Vertex source ties
# to it (Spot: `up` submits it anyway); or unknown.
FITS, SHORT, ADVISORY, UNKNOWN = "fits", "short", "advisory", "unknown"


@dataclass(frozen=True)
class Verdict:
    """How one shape stands (FITS, SHORT, ADVISORY or UNKNOWN), why, and the quotas it is short of."""

    kind: str
    why: str
    short: tuple[QuotaNeed, ...] = ()


def shape_verdict(shape: ShapeDemand, value: Callable[[str, str], int]) -> Verdict:
    """How `shape` stands against every quota it holds, in its region."""
    held, short, advisory = [], [], []
    for need in shape.needs:
        try:
            found = value(need.quota_id, shape.region)
        except QuotaUnreadable as exc:
            return Verdict(UNKNOWN, f"{need.quota_id} in {shape.region} unreadable ({exc})", (need,))
        if 0 <= found < need.count:
            why = f"{need.quota_id} in {shape.region} is {found}, it needs {need.count} {need.what}"
            (advisory if need.advisory else short).append((need, why))
        else:
            held.append(f"{need.quota_id} {'unlimited' if found < 0 else found} >= {need.count}")
    for kind, found in ((SHORT, short), (ADVISORY, advisory)):
        if found:
            return Verdict(kind, "; ".join(why for _, why in found), tuple(need for need, _ in found))
    return Verdict(FITS, "; ".join(held) or "no quota counts its machines")


def job_quota(job: JobDemand, value: Callable[[str, str], int], caller: Caller, project_id: str) -> Result:
    """Walks the job's shapes as `up` does: a short shape is skipped, the first other one decides; the
    shapes after it are reported too."""
    item = f"quota, {job.name}"
    verdicts = [(shape, shape_verdict(shape, value)) for shape in job.shapes]
    index = next((i for i, (_, v) in enumerate(verdicts) if v.kind != SHORT), len(verdicts))
    skipped = [f"{shape.label}: {v.why}" for shape, v in verdicts[:index]]
    if index == len(verdicts):
        first, verdict = verdicts[0]
        fix = _request(first, verdict, caller, project_id)
        return missing(item, f"no shape has quota: {'; '.join(skipped)}", fix)
    shape, verdict = verdicts[index]
    before = f" ({'; '.join(skipped)}: `up` skips {'it' if len(skipped) == 1 else 'them'})" if skipped else ""
    after = [f"{later.label}: {v.kind}" for later, v in verdicts[index + 1 :]]
    later = f"; then {', '.join(after)}" if after else ""
    advice = {
        FITS: "",
        UNKNOWN: "; reading quotas needs cloudquotas.quotas.get (roles/cloudquotas.viewer) and the "
        "Cloud Quotas API on",
        ADVISORY: "; no Vertex source says Spot training draws on it (Compute Engine advises it for Spot "
        "VMs): `up` submits the job, which may queue or be refused",
    }[verdict.kind]
    detail = f"{shape.label} in {shape.region}: {verdict.why}{advice}{before}{later}"
    if verdict.kind == FITS:
        return ok(item, detail)
    if verdict.kind == UNKNOWN:
        [need] = verdict.short
        read = f"gcloud beta quotas info describe {need.quota_id} --service={VERTEX_SERVICE}"
        return cannot_tell(item, detail, f"{read} --project={project_id}")
    return cannot_tell(item, detail, _request(shape, verdict, caller, project_id))


def _request(shape: ShapeDemand, verdict: Verdict, caller: Caller, project_id: str) -> str:
    """Commands that request the quotas `shape` is short of (new projects start at 0; approval takes time)."""
    email = caller.member.split(":", 1)[1] if caller.member and caller.member.startswith("user:") else "<you>"
    commands = [request_command(need, project_id, shape.region, email) for need in verdict.short]
    return f"{' ; '.join(commands)} (or in the console: {request_url(project_id)})"


def cloud_build_region(region: str, image_builder: str, stack: str) -> Result:
    """The region takes Cloud Build builds (its locations page); no API tells a project's restriction."""
    item = "Cloud Build region"
    if image_builder != "cloudbuild":
        return ok(item, f"not used: imageBuilder {image_builder} builds the image on this machine")
    if region not in BUILD_REGIONS:
        return missing(
            item,
            f"Cloud Build runs no builds in {region} ({LOCATIONS_URL})",
            f"{_set('imageBuilder', 'docker', stack)}, or a region where Cloud Build runs",
        )
    note = (
        ""
        if region in ALWAYS_OPEN_REGIONS
        else f" (some projects may build only in {', '.join(ALWAYS_OPEN_REGIONS)}: {LOCATIONS_URL})"
    )
    return ok(item, f"Cloud Build runs builds in {region}{note}")
