"""The preflight runner: a stack's configuration in, every check's Result out, in a fixed order."""

from __future__ import annotations

from functools import cache, partial

from google.auth import exceptions as auth_exceptions
from google.cloud import billing_v1, cloudquotas_v1, iam_admin_v1, resourcemanager_v3, service_usage_v1

from infra.bootstrap.stack_accounts import stack_account_ids
from infra.config import StackConfig, shapes
from infra.preflight import accounts, checks, clients, demand, prices
from infra.preflight import permissions as up
from infra.preflight.accounts import StackAccount
from infra.preflight.caller import Caller, credentials
from infra.preflight.quota import QuotaValues, job_quota
from infra.preflight.results import OK, Result, cannot_tell, note, ok
from infra.stack import required_apis
from infra.vertex.capacity import gpu_regions
from infra.vertex.capacity.quotas import quota_client


def settings(cfg: StackConfig) -> frozenset[str]:
    """Which of the conditional calls of `pulumi up` (permissions.DEPLOY_CALLS `when`) this stack makes."""
    on = {
        up.BUDGET: cfg.budget is not None,
        up.KILL_SWITCH: cfg.kill_switch,
        up.TUNING: cfg.tuning is not None,
        up.MODEL_REGISTRY: cfg.model_registry.register,
        up.CLOUD_BUILD: cfg.image_builder == "cloudbuild",
        up.EXPERIMENT: cfg.experiment is not None,
        up.TENSORBOARD: cfg.tensorboard,
        up.BATCH_PREDICTION: cfg.batch_prediction is not None,
        up.ENDPOINT: cfg.endpoint is not None,
    }
    return frozenset(name for name, used in on.items() if used)


def project_needs(cfg: StackConfig) -> dict[str, str]:
    """Permission -> granting role, for what this stack's `up` calls on the project."""
    return {p: up.GRANTED_BY[p] for p in sorted(up.needed(settings(cfg)) - up.BILLING_PERMISSIONS)}


def stack_accounts(cfg: StackConfig) -> list[StackAccount]:
    """The stack's own accounts it has with its settings, each with permission -> granting role `up` needs."""
    ids = stack_account_ids(cfg.stack)
    return [
        StackAccount(purpose, ids[purpose], {p: up.GRANTED_BY[p] for p in sorted(needed)})
        for purpose, needed in up.needed_on_accounts(settings(cfg)).items()
    ]


def offline(cfg: StackConfig) -> list[Result]:
    """What the stack file alone tells, printed whatever preflight cannot read: whether Cloud Build runs in
    the region, each (GPU, region) of the training job's chain that the dated GPU table does not list
    (a note: Vertex decides at submission, and the chain moves on if it refuses), the shapes each job's
    price limits skip (prices.py: the Billing Catalog where the credentials read it, else the cited table),
    and each machine type of a family the machine facts do not list (an unknown type of a listed family is
    a configuration problem)."""
    results = [checks.cloud_build_region(cfg.region, cfg.image_builder, cfg.stack)]
    lines = gpu_regions.unlisted_lines(gpu_regions.known_chain(demand.training_props(cfg)))
    machines = [note("machine types", line) for line in shapes.config_warnings(cfg)]
    return [
        *results,
        *(note("GPU regions", line) for line in lines),
        *prices.results(cfg),
        *machines,
    ]


def run(cfg: StackConfig) -> list[Result]:
    """Every check for a cloud stack (a local stack has nothing in Google Cloud to check); the offline
    findings always, even when the credentials or the API clients fail."""
    if cfg.is_local:
        return [ok("stack", f"{cfg.stack} runs its jobs on this machine: nothing in Google Cloud to check")]
    project, stack = cfg.gcp_project, cfg.stack
    found, caller = credentials(project)
    if caller is None:
        return [found, *offline(cfg)]  # every other check reads with these credentials
    results = [found]
    billed = None if caller.quota_project else project  # the credentials' own quota project, else this one
    try:
        projects, billing = clients.projects(billed), clients.billing(billed)
        usage, iam, quotas = clients.service_usage(billed), clients.iam(billed), quota_client(project)
    except auth_exceptions.GoogleAuthError as exc:
        return [*results, cannot_tell("clients", f"could not make the API clients: {exc}"), *offline(cfg)]
    account = cfg.budget.billing_account if cfg.budget else ""
    found = checks.guarded("project", lambda: checks.project(projects, project, stack))
    results.append(found)
    if found.status == OK:
        results += _in_project(cfg, caller, projects, billing, usage, iam, quotas)
    if account and up.BUDGET in settings(cfg):
        results.append(
            checks.guarded(
                "budget rights",
                lambda: checks.budget_rights(billing, account, up.BILLING_PERMISSIONS, caller, stack),
            )
        )
    return [*results, *offline(cfg)]


def _in_project(
    cfg: StackConfig,
    caller: Caller,
    projects: resourcemanager_v3.ProjectsClient,
    billing: billing_v1.CloudBillingClient,
    usage: service_usage_v1.ServiceUsageClient,
    iam: iam_admin_v1.IAMClient,
    quotas: cloudquotas_v1.CloudQuotasClient,
) -> list[Result]:
    """The checks that read inside the project (each would only repeat a missing project's line)."""
    project, stack = cfg.gcp_project, cfg.stack
    account = cfg.budget.billing_account if cfg.budget else ""
    results = []
    if account:
        results.append(checks.guarded("billing", lambda: checks.billing(billing, project, account, stack)))
    held: set[str] = set()

    def permissions() -> Result:
        result, got = checks.project_permissions(projects, project, project_needs(cfg), caller)
        held.update(got)
        return result

    results.append(checks.guarded("permissions on the project", permissions))
    results += _accounts(cfg, caller, projects, iam)
    may_enable = "serviceusage.services.enable" in held
    results.append(
        checks.guarded("APIs", lambda: checks.apis(usage, project, required_apis(cfg), may_enable))
    )
    if cfg.kill_switch:
        results.append(checks.guarded("kill-switch role", lambda: checks.kill_switch_role(iam, project)))
    values = QuotaValues(quotas, project)
    results += [job_quota(job, values, caller, project) for job in demand.jobs(cfg)]
    return results


def _accounts(
    cfg: StackConfig,
    caller: Caller,
    projects: resourcemanager_v3.ProjectsClient,
    iam: iam_admin_v1.IAMClient,
) -> list[Result]:
    """One line per account of the stack; the project is asked once, and only if an account is not created."""
    project, stack = cfg.gcp_project, cfg.stack
    mine = stack_accounts(cfg)
    wanted = sorted(set().union(*(account.needed for account in mine)))

    @cache
    def held_on_project() -> set[str]:
        response = projects.test_iam_permissions(
            resource=f"projects/{project}", permissions=wanted, timeout=clients.CALL_TIMEOUT_SECONDS
        )
        return set(response.permissions)

    return [
        checks.guarded(
            account.item,
            partial(accounts.check, iam, project, stack, account, caller, held_on_project),
        )
        for account in mine
    ]
