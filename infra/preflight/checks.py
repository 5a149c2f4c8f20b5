"""One function per preflight item: each reads one thing, read-only, and returns a Result with its fix.

Google API errors a check does not expect end as "cannot tell" lines (`guarded`), never as a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from google.api_core import exceptions as gexc
from google.cloud import billing_v1, iam_admin_v1, resourcemanager_v3, service_usage_v1

from infra.cloudbuild.regions import ALWAYS_OPEN_REGIONS, BUILD_REGIONS, LOCATIONS_URL
from infra.components.killswitch import PERMISSIONS as KILL_SWITCH_PERMISSIONS
from infra.components.killswitch import ROLE_ID, role_name
from infra.config import NAMESPACE
from infra.least_privilege.custom_roles import KILL_SWITCH
from infra.preflight.caller import Caller
from infra.preflight.clients import CALL_TIMEOUT_SECONDS
from infra.preflight.results import Result, cannot_tell, missing, ok

# Service Usage's batchGet takes at most 30 services per call (services.batchGet reference).
BATCH_GET_LIMIT = 30


def _set(key: str, value: str, stack: str) -> str:
    return f"pulumi config set {NAMESPACE}:{key} {value} --stack {stack}"


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
            "(yours: `gcloud projects list`); if it is there, you need resourcemanager.projects.get on it "
            "(roles/browser)",
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
        f"gcloud iam roles create {ROLE_ID} --project={project_id} --stage=GA --title={KILL_SWITCH.title!r} "
        f"--description={KILL_SWITCH.description!r} --permissions={','.join(KILL_SWITCH_PERMISSIONS)}"
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


def batch_images(images: str, project: str) -> Result:
    """The batch prediction's gs:// prefix holds JPEG/PNG files, listed as the job lists them (batch/kind.py:
    recursively, by suffix), with the caller's credentials."""
    from google.cloud import storage  # type: ignore[attr-defined]  # google-cloud-storage has no py.typed

    from infra.vertex.batch.spec import IMAGE_SUFFIXES

    item = "batch prediction images"
    bucket, _, prefix = images.removeprefix("gs://").partition("/")
    try:
        names = [
            blob.name
            for blob in storage.Client(project=project).list_blobs(
                bucket, prefix=prefix, timeout=CALL_TIMEOUT_SECONDS
            )
            if blob.name.lower().endswith(IMAGE_SUFFIXES)
        ]
    except gexc.NotFound:
        return missing(
            item,
            f"bucket {bucket} of {images} does not exist, so the batch prediction after training would fail",
            f"gcloud storage buckets create gs://{bucket} --project={project} && "
            f"gcloud storage cp <folder>/* {images}",
        )
    if not names:
        return missing(
            item,
            f"{images} holds no .jpg/.jpeg/.png files, so the batch prediction after training would fail",
            f"gcloud storage cp <folder>/* {images}",
        )
    return ok(item, f"{len(names)} JPEG/PNG file(s) under {images}")
