"""Quota pre-check: refuse a Vertex job at once when its region's training GPU or CPU quota cannot hold it.

A new project's Vertex AI GPU quotas are 0 (its CPU quota may be 0 too) and Spot ("preemptible") machines
have their own quotas; without this check such a job sits QUEUED until a timeout cancels it. Quotas are read
with the Cloud Quotas API
(https://cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos/get): a
QuotaInfo's `dimensions_infos` holds the value per region, and an entry without a region dimension is the
default for every region not listed. Quota ids follow the names Vertex AI reports in its quota errors
("The following quotas are exceeded: CustomModelTrainingT4GPUsPerProjectPerRegion"); their metrics are
`aiplatform.googleapis.com/custom_model_training[_preemptible]_nvidia_<gpu>_gpus`.
The check compares the job with the quota's value (the limit), not with what other running jobs leave free:
it catches the "0 on a new project" case at once; a busy quota still shows as a queued job.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions
from google.cloud import cloudquotas_v1
from google.cloud.cloudquotas_v1.services.cloud_quotas.transports import CloudQuotasGrpcTransport

from infra.vertex.endpoints import client_kwargs
from infra.vertex.errors import JobError

SERVICE = "aiplatform.googleapis.com"
ENDPOINT = "cloudquotas.googleapis.com"
CALL_TIMEOUT_SECONDS = 30.0
# Vertex accelerator enum -> the GPU's name inside Vertex AI's custom-training quota ids. Seen in Vertex's own
# quota errors and requests: T4 and A10080GB (training), L4 and H100 (the serving twins); the others follow
# the same pattern. An id Google does not publish reads NOT_FOUND and the check steps aside with a warning;
# accelerators not listed (new GPU types) are not checked, and Vertex still answers RESOURCE_EXHAUSTED.
QUOTA_GPU_NAMES: dict[str, str] = {
    "NVIDIA_TESLA_T4": "T4",
    "NVIDIA_TESLA_P4": "P4",
    "NVIDIA_TESLA_P100": "P100",
    "NVIDIA_TESLA_V100": "V100",
    "NVIDIA_L4": "L4",
    "NVIDIA_TESLA_A100": "A100",
    "NVIDIA_A100_80GB": "A10080GB",
    "NVIDIA_H100_80GB": "H100",
}


# vCPUs per machine of the GPU families whose names do not end in the vCPU count (Compute Engine's
# accelerator-optimized machine tables). Other predefined types end in it: n1-standard-8 has 8.
_GPU_MACHINE_VCPUS_PER_GPU = {"a2-highgpu": 12, "a2-ultragpu": 12, "a3-highgpu": 26, "a3-megagpu": 26}
_VCPUS_SUFFIX = re.compile(r"(?:n1|n2|n2d|e2|c2|c2d|c3|g2)-[a-z]+-(\d+)")
_GPUS_SUFFIX = re.compile(r"([a-z0-9]+-[a-z]+)-(\d+)g")


@dataclass(frozen=True)
class QuotaNeed:
    """How much of one Vertex custom-training quota a job holds at once."""

    quota_id: str
    count: int
    what: str  # e.g. "Spot (preemptible) NVIDIA_TESLA_T4 GPU(s)"


def gpu_quota_id(accelerator_type: str, spot: bool) -> str:
    kind = "Preemptible" if spot else ""
    return f"CustomModelTraining{kind}{QUOTA_GPU_NAMES[accelerator_type]}GPUsPerProjectPerRegion"


def cpu_quota_id(spot: bool) -> str:
    # Metric aiplatform.googleapis.com/custom_model_training[_preemptible]_cpus, named like the GPU quota ids.
    return f"CustomModelTraining{'Preemptible' if spot else ''}CPUsPerProjectPerRegion"


def machine_vcpus(machine_type: str) -> int | None:
    """vCPUs of a predefined machine type, or None for a type this table does not know."""
    if match := _VCPUS_SUFFIX.fullmatch(machine_type):
        return int(match[1])
    if (match := _GPUS_SUFFIX.fullmatch(machine_type)) and match[1] in _GPU_MACHINE_VCPUS_PER_GPU:
        return _GPU_MACHINE_VCPUS_PER_GPU[match[1]] * int(match[2])
    return None


def quota_needs(props: Mapping[str, Any]) -> list[QuotaNeed]:
    """GPUs per accelerator type and vCPUs over all pools (per replica x replicas); unknown types skipped."""
    spot = bool(props.get("spot"))
    gpus: dict[str, int] = {}
    cpus = 0
    for pool in props.get("worker_pools") or []:
        replicas = int(pool.get("replica_count", 1))
        kind = pool.get("accelerator_type")
        if kind in QUOTA_GPU_NAMES and pool.get("accelerator_count"):
            gpus[kind] = gpus.get(kind, 0) + int(pool["accelerator_count"]) * replicas
        cpus += (machine_vcpus(str(pool.get("machine_type", ""))) or 0) * replicas
    preemptible = "Spot (preemptible) " if spot else ""
    needs = [
        QuotaNeed(gpu_quota_id(kind, spot), count, f"{preemptible}{kind} GPU(s)")
        for kind, count in sorted(gpus.items())
    ]
    if cpus:
        needs.append(QuotaNeed(cpu_quota_id(spot), cpus, f"{preemptible}vCPUs"))
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


def request_url(project: str) -> str:
    return f"https://console.cloud.google.com/iam-admin/quotas?project={project}&service={SERVICE}"


def _shortfall(need: QuotaNeed, info: cloudquotas_v1.QuotaInfo, value: int, project: str, region: str) -> str:
    return (
        f"Vertex AI quota {need.quota_id} ({info.metric or 'custom training'}) in project {project}, "
        f"region {region} is {value}; this job needs {need.count} {need.what}, "
        "so it would wait in the queue until it times out.\n"
        f"Request at least {need.count} at {request_url(project)} "
        f"(filter on {need.quota_id}, region {region}), or: gcloud beta quotas preferences create "
        f"--service={SERVICE} --quota-id={need.quota_id} --dimensions=region={region} "
        f"--preferred-value={need.count} --project={project} --email=<you>. New projects start at 0 and "
        "approval is not immediate; or choose another region, machine or `spot` setting that has quota."
    )


def _warn(message: str) -> None:
    print(f"Quota pre-check skipped: {message}", file=sys.stderr, flush=True)


def check_quota(props: Mapping[str, Any]) -> None:
    """JobError when a Vertex job needs more GPUs or vCPUs than its quota allows; a warning if unreadable."""
    if props.get("runner", "vertex") != "vertex":
        return
    needs = quota_needs(props)
    if not needs:
        return
    project, region = props["project"], props["region"]
    try:
        # Cloud Quotas is a client-based API: user credentials need a quota project to bill the call to
        # (cloud.google.com/docs/quotas/set-quota-project); the job's own project is the natural one.
        kwargs = client_kwargs(CloudQuotasGrpcTransport, ENDPOINT, quota_project=project)
        client = cloudquotas_v1.CloudQuotasClient(**kwargs)
    except auth_exceptions.GoogleAuthError as exc:
        # Submitting the job reports missing credentials with its own advice.
        _warn(f"no credentials to read quotas ({exc})")
        return
    for need in needs:
        name = f"projects/{project}/locations/global/services/{SERVICE}/quotaInfos/{need.quota_id}"
        try:
            info = client.get_quota_info(name=name, timeout=CALL_TIMEOUT_SECONDS)
        except gexc.PermissionDenied as exc:
            _warn(
                f"cannot read {need.quota_id} ({exc.message}); grant roles/cloudquotas.viewer and enable "
                "cloudquotas.googleapis.com to have it checked before submitting"
            )
            return
        except gexc.GoogleAPICallError as exc:
            code = exc.grpc_status_code.name if exc.grpc_status_code else type(exc).__name__
            # One quota id Google does not publish (NOT_FOUND) leaves the others worth reading.
            _warn(f"reading {need.quota_id} failed ({code}: {exc.message})")
            continue
        value = region_value(info, region)
        # A negative value means unlimited; no entry for the region means Google publishes none to compare.
        if value is not None and 0 <= value < need.count:
            raise JobError(_shortfall(need, info, value, project, region))
