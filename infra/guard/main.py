"""Budget kill switch: when spend reaches the threshold, cancel this stack's live Vertex AI jobs (every kind
in job_kinds.JOB_KINDS: tuning jobs, custom jobs, batch predictions) in every region the stack's jobs may
run in, then undeploy the stack's deployed models there (deployed_models.py: its endpoint's, and its
model's on any endpoint), which bill every hour, requests or not.

Each region, each job kind and each deployed model is handled on its own (live_jobs.py and
deployed_models.py, the listings `python -m infra.leftovers` uses too): a listing, a cancel or an undeploy
that fails (permission, outage, an RPC the service does not answer) is logged
and the others still happen; the function then raises, so Pub/Sub redelivers the notification and the next
delivery tries what failed again.
Deployed on its own as a Cloud Run function (Cloud Functions 2nd gen), so it imports nothing from `infra`: its
source is this directory's main.py, its sibling modules and requirements.txt (infra/components/killswitch.py).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import functions_framework
from google.cloud import aiplatform_v1

# A sibling module, imported relatively: as `infra.guard.main` (the stack, the tests, infra.leftovers) and as
# the function's `main`, which functions-framework loads by path as a package rooted at this directory
# (_function_registry.load_function_module: submodule_search_locations=[its directory]).
from . import deployed_models, live_jobs
from .deployed_models import make_endpoint_client
from .live_jobs import EMULATOR_ENV, LIVE_STATES, job_filter, make_client

__all__ = ["EMULATOR_ENV", "LIVE_STATES", "job_filter", "make_client"]

ENV_PROJECT = "KILL_SWITCH_PROJECT"
ENV_REGION = "KILL_SWITCH_REGION"
# Every region the stack's chains name (the home region first), comma-separated; a function deployed before
# this variable existed has only KILL_SWITCH_REGION.
ENV_REGIONS = "KILL_SWITCH_REGIONS"
ENV_PULUMI_PROJECT = "KILL_SWITCH_PULUMI_PROJECT"
ENV_PULUMI_STACK = "KILL_SWITCH_PULUMI_STACK"
ENV_THRESHOLD = "KILL_SWITCH_THRESHOLD"


class MalformedNotification(ValueError):
    """The Pub/Sub message is not a Cloud Billing budget notification we can act on."""


class ConfigError(RuntimeError):
    """The function was deployed without the environment it needs."""


class CancelFailed(RuntimeError):
    """Some jobs could not be listed or cancelled; raising makes Pub/Sub redeliver the notification."""


@dataclass(frozen=True)
class Notification:
    cost: float
    budget: float
    currency: str
    budget_name: str
    cost_interval_start: str
    budget_id: str


@dataclass(frozen=True)
class GuardConfig:
    project: str
    region: str
    pulumi_project: str
    pulumi_stack: str
    threshold: float = 1.0
    regions: tuple[str, ...] = ()  # where to look: the home region and every fallback region

    @property
    def parent(self) -> str:
        return self.parent_in(self.region)

    def parent_in(self, region: str) -> str:
        return f"projects/{self.project}/locations/{region}"

    @property
    def all_regions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.region, *self.regions)))


@dataclass
class Outcome:
    action: str  # "ignored" | "below-threshold" | "cancelled"
    cancelled: list[str] = field(default_factory=list)
    already_stopping: list[str] = field(default_factory=list)
    # "<endpoint> <deployed model id>" of each model asked to undeploy
    undeployed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # job name (or deployed model) -> why it failed
    unlisted: dict[str, str] = field(default_factory=dict)  # "<region> <method>" -> why the listing failed


def log(severity: str, message: str, **fields: Any) -> None:
    """One structured log line; Cloud Logging reads `severity` and `message` from JSON on stdout."""
    print(json.dumps({"severity": severity, "message": message, **fields}, default=str), file=sys.stdout)
    sys.stdout.flush()


def load_config(env: Mapping[str, str]) -> GuardConfig:
    missing = [k for k in (ENV_PROJECT, ENV_REGION, ENV_PULUMI_PROJECT, ENV_PULUMI_STACK) if not env.get(k)]
    if missing:
        raise ConfigError(f"missing environment variables {missing}: redeploy the stack's KillSwitch")
    raw = env.get(ENV_THRESHOLD) or "1.0"
    try:
        threshold = float(raw)
    except ValueError:
        threshold = math.nan
    if not (math.isfinite(threshold) and threshold > 0):
        raise ConfigError(f"{ENV_THRESHOLD}={raw!r} is not a positive number: set killSwitchThreshold")
    regions = tuple(r.strip() for r in (env.get(ENV_REGIONS) or "").split(",") if r.strip())
    return GuardConfig(
        project=env[ENV_PROJECT],
        region=env[ENV_REGION],
        pulumi_project=env[ENV_PULUMI_PROJECT],
        pulumi_stack=env[ENV_PULUMI_STACK],
        threshold=threshold,
        regions=regions,
    )


def _amount(payload: Mapping[str, Any], key: str) -> float:
    value = payload.get(key)
    # bool is an int to Python but never an amount.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MalformedNotification(f"{key} is {value!r}, expected a number")
    return float(value)


def parse_notification(event_data: Any) -> Notification:
    """CloudEvent data of a Pub/Sub `messagePublished` event -> the budget notification it carries."""
    if not isinstance(event_data, Mapping) or not isinstance(event_data.get("message"), Mapping):
        raise MalformedNotification("event data has no Pub/Sub message")
    message = event_data["message"]
    encoded = message.get("data")
    if not encoded:
        raise MalformedNotification("Pub/Sub message has no data")
    try:
        text = base64.b64decode(encoded, validate=True).decode("utf-8")
        payload = json.loads(text)
    except (binascii.Error, TypeError, ValueError) as err:  # UnicodeDecodeError and JSONDecodeError too
        raise MalformedNotification(f"message data is not base64 JSON: {err}") from err
    if not isinstance(payload, dict):
        raise MalformedNotification(f"message data is JSON {type(payload).__name__}, expected an object")
    budget = _amount(payload, "budgetAmount")
    if budget <= 0:
        raise MalformedNotification(f"budgetAmount is {budget}, expected a positive amount")
    attributes = message.get("attributes") or {}
    return Notification(
        cost=_amount(payload, "costAmount"),
        budget=budget,
        currency=str(payload.get("currencyCode", "")),
        budget_name=str(payload.get("budgetDisplayName", "")),
        cost_interval_start=str(payload.get("costIntervalStart", "")),
        budget_id=str(attributes.get("budgetId", "")) if isinstance(attributes, Mapping) else "",
    )


def over_threshold(notification: Notification, threshold: float) -> bool:
    """Actual cost, not forecast: a forecast overshoot must not stop a job that may finish under budget."""
    limit = threshold * notification.budget
    # A float product (0.1 * 3 is 0.30000000000000004) must not lift the limit above an equal cost.
    return notification.cost >= limit or math.isclose(notification.cost, limit, rel_tol=1e-9)


def is_ours_and_live(job: Any, config: GuardConfig) -> bool:
    """Second check after the server-side filter: never cancel a job the filter let through by mistake."""
    return live_jobs.is_ours_and_live(job, config.pulumi_project, config.pulumi_stack)


def _stack(config: GuardConfig) -> live_jobs.StackId:
    return live_jobs.StackId(config.project, config.pulumi_project, config.pulumi_stack)


def _cancel(client: aiplatform_v1.JobServiceClient, job: live_jobs.LiveJob, outcome: Outcome) -> None:
    result = live_jobs.cancel_job(client, job)
    if result.outcome == "already stopping":
        outcome.already_stopping.append(job.name)
        log("INFO", "job already stopping", job=job.name, state=job.state, reason=result.reason)
    elif result.outcome == "failed":
        outcome.failed[job.name] = result.reason
        log("ERROR", "could not cancel job", job=job.name, state=job.state, error=result.reason)
    else:
        outcome.cancelled.append(job.name)
        log("NOTICE", "cancelled job", job=job.name, display_name=job.display_name, state=job.state)


def _record_unlisted(listing: live_jobs.Listing, outcome: Outcome) -> None:
    for where, error in listing.unlisted.items():
        region, _, method = where.partition(" ")
        outcome.unlisted[where] = error
        if method == "client":
            log("ERROR", "could not reach Vertex AI in this region", region=region, error=error)
        else:
            log("ERROR", "could not list this stack's jobs", region=region, method=method, error=error)


def cancel_live_jobs(
    client: aiplatform_v1.JobServiceClient, config: GuardConfig, region: str = ""
) -> Outcome:
    """Cancel this stack's live jobs of every kind (live_jobs.JOB_KINDS, studies first) in one region; a kind
    whose listing fails is logged (Outcome.unlisted) and the other kinds are still cancelled."""
    outcome = Outcome(action="cancelled")
    listing = live_jobs.list_in_region(
        client, _stack(config), region or config.region, lambda job: _cancel(client, job, outcome)
    )
    _record_unlisted(listing, outcome)
    return outcome


def cancel_everywhere(
    config: GuardConfig, client_factory: Callable[[str], aiplatform_v1.JobServiceClient]
) -> Outcome:
    """cancel_live_jobs in each region (a regional endpoint each); a region that fails does not stop the
    others."""
    outcome = Outcome(action="cancelled")
    listing = live_jobs.list_live_jobs(
        _stack(config),
        config.all_regions,
        client_factory,
        lambda client, job: _cancel(client, job, outcome),
    )
    _record_unlisted(listing, outcome)
    return outcome


def _undeploy(client: aiplatform_v1.EndpointServiceClient, served: list[Any], outcome: Outcome) -> None:
    for result in deployed_models.undeploy_all(client, served):
        one = result.served
        where = {"endpoint": one.endpoint, "deployed_model_id": one.deployed_model_id, "model": one.model}
        key = f"{one.endpoint} {one.deployed_model_id}"
        if result.outcome == "undeploying":
            outcome.undeployed.append(key)
            log("NOTICE", "undeploying model", traffic_percent=one.traffic_percent, **where)
        elif result.outcome == "gone":
            log("INFO", "deployed model already gone", **where)
        else:
            outcome.failed[key] = result.reason
            log("ERROR", "could not undeploy model", error=result.reason, **where)


def undeploy_everywhere(
    config: GuardConfig,
    client_factory: Callable[[str], aiplatform_v1.EndpointServiceClient],
    outcome: Outcome,
) -> None:
    """Undeploy the stack's deployed models in each region (not waiting for the operations); a region or a
    model that fails stops no other."""
    found = deployed_models.list_served(
        _stack(config), config.all_regions, client_factory, lambda c, served: _undeploy(c, served, outcome)
    )
    for where, error in found.unlisted.items():
        region, _, method = where.partition(" ")
        outcome.unlisted[where] = error
        log("ERROR", "could not list this region's endpoints", region=region, method=method, error=error)


def handle(
    event_data: Any,
    env: Mapping[str, str],
    client_factory: Callable[[str], aiplatform_v1.JobServiceClient] = make_client,
    endpoint_client_factory: Callable[[str], aiplatform_v1.EndpointServiceClient] = make_endpoint_client,
) -> Outcome:
    """Decide and act on one notification; malformed or below-threshold messages return without acting."""
    config = load_config(env)
    try:
        notification = parse_notification(event_data)
    except MalformedNotification as err:
        # Acknowledge: redelivering a message that can never parse would only loop.
        log("WARNING", "ignored malformed budget notification", error=str(err))
        return Outcome(action="ignored")
    context = {
        "cost": notification.cost,
        "budget": notification.budget,
        "currency": notification.currency,
        "budget_name": notification.budget_name,
        "budget_id": notification.budget_id,
        "cost_interval_start": notification.cost_interval_start,
        "threshold": config.threshold,
        "pulumi_stack": config.pulumi_stack,
    }
    if not over_threshold(notification, config.threshold):
        log("INFO", "budget below kill-switch threshold; nothing to do", **context)
        return Outcome(action="below-threshold")
    log(
        "WARNING",
        "budget kill-switch threshold reached; cancelling this stack's live jobs",
        regions=list(config.all_regions),
        **context,
    )
    outcome = cancel_everywhere(config, client_factory)
    # After the jobs: a job's cancel must not wait on the endpoints, and the endpoints bill until undeployed.
    undeploy_everywhere(config, endpoint_client_factory, outcome)
    counts = {
        "cancelled": len(outcome.cancelled),
        "already_stopping": len(outcome.already_stopping),
        "undeployed": len(outcome.undeployed),
        "failed": len(outcome.failed),
        "unlisted": sorted(outcome.unlisted),
    }
    if outcome.failed or outcome.unlisted:
        log("ERROR", "kill switch incomplete; Pub/Sub will redeliver", **counts, **context)
        problems = [*sorted(outcome.failed), *(f"listing {k}" for k in sorted(outcome.unlisted))]
        raise CancelFailed(f"could not cancel, undeploy or list {problems}; Pub/Sub will redeliver")
    log("NOTICE", "kill switch done", **counts, **context)
    return outcome


@functions_framework.cloud_event
def on_budget_notification(cloud_event: Any) -> None:
    """Entry point: a Pub/Sub message from the stack's budget topic."""
    handle(cloud_event.data, os.environ)
