"""Quota pre-check: find out at once when a Vertex job's region has too little training GPU or CPU quota.

A new project's Vertex AI GPU quotas are 0 (its CPU quota may be 0 too) and Spot ("preemptible") machines
have their own quotas; without this check such a job sits QUEUED until a timeout cancels it. Quotas are read
with the Cloud Quotas API
(https://cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos/get): a
QuotaInfo's `dimensions_infos` holds the value per region, and an entry without a region dimension is the
default for every region not listed.

Quota ids (read 2026-11-22):
- GPUs: Google's own `get_quota_id` helper (GoogleCloudPlatform/vertex-ai-samples,
  community-content/vertex_model_garden/model_oss/notebook_util/common_util.py) builds
  `CustomModelTraining<GPU>GPUsPerProjectPerRegion`, and `CustomModelTrainingPreemptible<GPU>...` for Dynamic
  Workload Scheduler (FLEX_START). For Spot the helper's training branch has no case (it returns the standard
  id whatever `is_spot` says, and maps Spot only for serving, to `CustomModelServingPreemptible...`), and no
  Vertex training page names a Spot quota id (searched 2026-11-22: "Use Spot VMs" for training and for
  prediction list limits and billing, no quota id); only Compute Engine's "Create and use Spot VMs" advises
  preemptible quota for Spot VMs. So a Spot job's Preemptible ids are read but a shortfall there is one
  warning line, never a skip or a refusal. Vertex names the same ids in its errors ("The following quotas
  are exceeded: CustomModelTrainingT4GPUsPerProjectPerRegion").
- vCPUs: `CustomModelTraining[Preemptible]CPUsPerProjectPerRegion` is the quota for N1 and E2 machine types
  only; no other family's custom-training vCPU quota id is documented, so their vCPUs are not checked
  (one stderr line says so) rather than refused on a guessed id.
The check compares the job with the quota's value (the limit), not with what other running jobs leave free:
it catches the "0 on a new project" case at once; a busy quota still shows as a queued job.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions
from google.cloud import cloudquotas_v1
from google.cloud.cloudquotas_v1.services.cloud_quotas.transports import CloudQuotasGrpcTransport

from infra.dynamic.endpoints import client_kwargs
from infra.vertex.capacity.machines import (
    CPU_QUOTA_FAMILIES,
    PREEMPTIBLE_STRATEGIES,
    QUOTA_GPU_NAMES,
    VCPUS_PER_GPU,
)
from infra.vertex.capacity.placement import Pool

SERVICE = "aiplatform.googleapis.com"
ENDPOINT = "cloudquotas.googleapis.com"
CALL_TIMEOUT_SECONDS = 30.0


# Predefined types other than the GPU families of machines.VCPUS_PER_GPU end in their vCPU count.
_VCPUS_SUFFIX = re.compile(r"(?:n1|n2|n2d|e2|c2|c2d|c3|g2)-[a-z]+-(\d+)")
_GPUS_SUFFIX = re.compile(r"([a-z0-9]+-[a-z]+)-(\d+)g")


@dataclass(frozen=True)
class QuotaNeed:
    """How much of one Vertex custom-training quota a job holds at once."""

    quota_id: str
    count: int
    what: str  # e.g. "Spot (preemptible) NVIDIA_TESLA_T4 GPU(s)"
    advisory: bool = False  # an id no Vertex source ties to this job (Spot): a shortfall only warns


def gpu_quota_id(accelerator_type: str, preemptible: bool, use: str = "Training") -> str:
    """The GPU quota id of `use` (Training or Serving), on get_quota_id's pattern (above)."""
    kind = "Preemptible" if preemptible else ""
    return f"CustomModel{use}{kind}{QUOTA_GPU_NAMES[accelerator_type]}GPUsPerProjectPerRegion"


# A deployed model's GPU quota: Google's `get_quota_id` (above) maps serving to
# `CustomModelServing<GPU>GPUsPerProjectPerRegion` and Spot serving to `CustomModelServingPreemptible...`
# (read 2026-11-22); a Google Model Garden notebook names both for H100 (vertex-ai-samples, read
# 2026-11-29). DedicatedResources.max_replica_count: quota is charged for "max_replica_count * number of
# GPUs per replica" (machine_resources.proto, read 2026-11-29).
def serving_needs(accelerator_type: str | None, count: int, max_replicas: int, spot: bool) -> list[QuotaNeed]:
    """The GPUs a deployment holds in quota across a retraining, when the old and the new version are
    deployed at once (2 x max replicas x GPUs); none for a CPU-only one or a GPU without a quota name."""
    if not accelerator_type or not count or accelerator_type not in QUOTA_GPU_NAMES:
        return []
    spot_words = "Spot " if spot else ""
    what = f"{spot_words}{accelerator_type} GPU(s): max replicas x GPUs, twice while a retraining swaps"
    return [QuotaNeed(gpu_quota_id(accelerator_type, spot, "Serving"), 2 * max_replicas * count, what)]


def machine_vcpus(machine_type: str) -> int | None:
    """vCPUs of a predefined machine type, or None for a type this table does not know."""
    if match := _VCPUS_SUFFIX.fullmatch(machine_type):
        return int(match[1])
    if (match := _GPUS_SUFFIX.fullmatch(machine_type)) and match[1] in VCPUS_PER_GPU:
        return VCPUS_PER_GPU[match[1]] * int(match[2])
    return None


def unchecked(pools: Sequence[Pool]) -> list[str]:
    """What the check cannot count, for lack of a documented quota id: machine families and accelerators."""
    names = set()
    for pool in pools:
        if pool.machine_type.split("-", 1)[0] not in CPU_QUOTA_FAMILIES:
            names.add(f"vCPUs of {pool.machine_type}")
        kind = pool.accelerator_type
        if kind and kind not in QUOTA_GPU_NAMES:
            names.add(kind)
    return sorted(names)


def quota_needs(pools: Sequence[Pool], strategy: str) -> list[QuotaNeed]:
    """GPUs per accelerator type and N1/E2 vCPUs over all pools (per replica x replicas) on the scheduling
    `strategy` (Spot and FLEX_START: the preemptible ids); the rest skipped."""
    preemptible = strategy in PREEMPTIBLE_STRATEGIES
    gpus: dict[str, int] = {}
    cpus = 0
    for pool in pools:
        kind = pool.accelerator_type
        if kind is not None and kind in QUOTA_GPU_NAMES and pool.accelerator_count:
            gpus[kind] = gpus.get(kind, 0) + pool.accelerator_count * pool.replica_count
        if pool.machine_type.split("-", 1)[0] in CPU_QUOTA_FAMILIES:
            cpus += (machine_vcpus(pool.machine_type) or 0) * pool.replica_count
    spot = strategy == "SPOT"
    what = "Spot (preemptible) " if spot else "FLEX_START (preemptible) " if preemptible else ""
    needs = [
        QuotaNeed(gpu_quota_id(kind, preemptible), count, f"{what}{kind} GPU(s)", spot)
        for kind, count in sorted(gpus.items())
    ]
    if cpus:  # the vCPU quota of N1 and E2 machine types (CPU_QUOTA_FAMILIES) only
        cpu_quota = f"CustomModelTraining{'Preemptible' if preemptible else ''}CPUsPerProjectPerRegion"
        needs.append(QuotaNeed(cpu_quota, cpus, f"{what}vCPUs", spot))
    return needs


def region_value(info: cloudquotas_v1.QuotaInfo, region: str) -> int | None:
    """The quota value in `region`: its own entry, else the entry without a region (the default)."""
    default = None
    for entry in info.dimensions_infos:
        where = entry.dimensions.get("region")
        if where == region:
            return entry.details.value
        if where is None:
            default = entry.details.value
    return default


def quota_page(project: object) -> str:
    """Where a project's Vertex AI quotas are read and raised (Cloud console, IAM & Admin > Quotas)."""
    return f"https://console.cloud.google.com/iam-admin/quotas?project={project}&service=aiplatform.googleapis.com"


def _shortfall(need: QuotaNeed, info: cloudquotas_v1.QuotaInfo, value: int, project: str, region: str) -> str:
    return (
        f"Vertex AI quota {need.quota_id} ({info.metric or 'custom training'}) in project {project}, "
        f"region {region} is {value}; this job needs {need.count} {need.what}, "
        "so it would wait in the queue until it times out.\n"
        f"Request at least {need.count} at {quota_page(project)} "
        f"(filter on {need.quota_id}, region {region}), or: {request_command(need, project, region)}. "
        "New projects start at 0 and "
        "approval is not immediate; or choose another region, machine or `spot` setting that has quota."
    )


def request_command(need: QuotaNeed, project: str, region: str, email: str = "<you>") -> str:
    """The gcloud command that asks for `need.count` of the quota in `region`."""
    return (
        f"gcloud beta quotas preferences create --service={SERVICE} --quota-id={need.quota_id} "
        f"--dimensions=region={region} --preferred-value={need.count} --project={project} --email={email}"
    )


def trials_at_once(pools: Sequence[Pool], parallel: int) -> tuple[Pool, ...]:
    """A trial job's pools as `parallel` copies of themselves: what a study holds at once."""
    return tuple(replace(pool, replica_count=pool.replica_count * parallel) for pool in pools)


def quota_client(project: str) -> cloudquotas_v1.CloudQuotasClient:
    """A Cloud Quotas client billing its calls to `project` (a client-based API: user credentials need a quota
    project, cloud.google.com/docs/quotas/set-quota-project); GoogleAuthError without credentials."""
    return cloudquotas_v1.CloudQuotasClient(
        **client_kwargs(CloudQuotasGrpcTransport, ENDPOINT, quota_project=project)
    )


def quota_info(
    client: cloudquotas_v1.CloudQuotasClient, project: str, quota_id: str
) -> cloudquotas_v1.QuotaInfo:
    name = f"projects/{project}/locations/global/services/{SERVICE}/quotaInfos/{quota_id}"
    return client.get_quota_info(name=name, timeout=CALL_TIMEOUT_SECONDS)


def _warn(message: str) -> None:
    print(f"Quota pre-check skipped: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Shortfall:
    """A quota that cannot hold the job: the advice in full, and a short reason for an attempt list."""

    message: str
    reason: str


def shortfall(project: str, region: str, pools: Sequence[Pool], strategy: str) -> Shortfall | None:
    """The first quota too small for a Vertex job on `pools` in `region`, or None (also when quotas cannot
    be read: a warning)."""
    if skipped := unchecked(pools):
        _warn(f"no documented Vertex AI custom-training quota id for {', '.join(skipped)}; not checked")
    needs = quota_needs(pools, strategy)
    if not needs:
        return None
    try:
        client = quota_client(project)
    except auth_exceptions.GoogleAuthError as exc:
        # Submitting the job reports missing credentials with its own advice.
        _warn(f"no credentials to read quotas ({exc})")
        return None
    for need in needs:
        try:
            info = quota_info(client, project, need.quota_id)
        except gexc.PermissionDenied as exc:
            _warn(
                f"cannot read {need.quota_id} ({exc.message}); grant roles/cloudquotas.viewer and enable "
                "cloudquotas.googleapis.com to have it checked before submitting"
            )
            return None
        except gexc.GoogleAPICallError as exc:
            code = exc.grpc_status_code.name if exc.grpc_status_code else type(exc).__name__
            # One quota id Google does not publish (NOT_FOUND) leaves the others worth reading.
            _warn(f"reading {need.quota_id} failed ({code}: {exc.message})")
            continue
        value = region_value(info, region)
        # A negative value means unlimited; no entry for the region means Google publishes none to compare.
        if value is not None and 0 <= value < need.count and need.advisory:
            print(
                f"Quota pre-check: {need.quota_id} in {region} is {value} and this job needs {need.count} "
                f"{need.what}; no Vertex source says Spot training uses that quota, so the job is submitted "
                "(Vertex answers RESOURCE_EXHAUSTED or queues it if the quota is short)",
                file=sys.stderr,
                flush=True,
            )
        elif value is not None and 0 <= value < need.count:
            return Shortfall(
                _shortfall(need, info, value, project, region),
                f"quota {need.quota_id} in {region} is {value}, the job needs {need.count}",
            )
    return None
