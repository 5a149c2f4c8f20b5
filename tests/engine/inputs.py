"""CustomJob inputs exactly as the Python SDK serializes them, recorded under Pulumi's mock runtime.

Upstream values come from a real resource registered beside the job (a service account), so in a preview they
are unknown the way they are on a first `pulumi up`: the SDK, not this test, decides how an unknown string, an
unknown list built with `apply` or an unknown flag is encoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pulumi
import pulumi_gcp as gcp
from google.protobuf import struct_pb2

from infra.vertex.custom_job.resource import RESOURCE_TYPE, CustomJob, CustomJobArgs, WorkerPool
from tests.fakes.pulumi_mocks import run_program

PROJECT = "demo-project"
REGION = "us-central1"
SECRET = "s3cr3t-token-do-not-store"
IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/trainer/trainer"


@dataclass(frozen=True)
class JobShape:
    """The recorded job; `unknown` names the inputs that depend on not-yet-created resources."""

    unknown: frozenset[str] = frozenset({"service_account", "image_uri", "args"})
    runner: str = "vertex"
    base_output_dir: str = "gs://demo-bucket/runs/1"
    command: tuple[str, ...] = ("python", "-m", "trainer.task")
    args: tuple[str, ...] = ("--epochs", "1")
    env: dict[str, str] = field(default_factory=lambda: {"TF_USE_LEGACY_KERAS": "1"})
    secret_env: bool = True
    wait: bool = True
    poll_interval_seconds: float = 0.05
    timeout_seconds: int = 600
    accelerator: bool = True
    scheduling_strategy: str | None = None
    max_wait_seconds: int | None = None
    fallbacks: tuple[dict[str, Any], ...] = ()
    max_cost_usd: float | None = None
    fallback_regions: tuple[str, ...] = ()
    reservation_affinity: dict[str, str] | None = None
    capacity_deadline_seconds: int | None = None


def _program(shape: JobShape) -> Any:
    account = gcp.serviceaccount.Account("trainer", account_id="trainer", project=PROJECT)
    # The digest is what the image build computes: the service account stands in as an upstream output here.
    digest = account.email.apply(lambda email: "sha256:" + "a" * 64 if email else "")

    def upstream(key: str, value: Any) -> Any:
        """`value`, or an Output of it that waits for the upstream resource when `key` is meant unknown."""
        return account.email.apply(lambda _: value) if key in shape.unknown else value

    env: dict[str, Any] = dict(shape.env)
    if shape.secret_env:
        env["WANDB_API_KEY"] = pulumi.Output.secret(SECRET)
    pool = WorkerPool(
        machine_type="n1-standard-8" if shape.accelerator else "n1-standard-4",
        accelerator_type="NVIDIA_TESLA_T4" if shape.accelerator else None,
        accelerator_count=1 if shape.accelerator else 0,
        image_uri=digest.apply(lambda d: f"{IMAGE}@{d}")
        if "image_uri" in shape.unknown
        else f"{IMAGE}:local",
        command=list(shape.command),
        # An args list built with apply is unknown as a whole in a preview.
        args=upstream("args", list(shape.args)),
        env=env,
    )
    service_account = account.email if "service_account" in shape.unknown else f"trainer@{PROJECT}.iam"
    job = CustomJob(
        "train",
        CustomJobArgs(
            project=PROJECT,
            region=REGION,
            display_name="engine-boundary",
            worker_pools=[pool],
            service_account=service_account,
            base_output_dir=upstream("base_output_dir", shape.base_output_dir),
            labels={"managed-by": "pulumi", "pulumi_stack": "dev"},
            timeout_seconds=shape.timeout_seconds,
            wait=upstream("wait", shape.wait),
            poll_interval_seconds=shape.poll_interval_seconds,
            runner=shape.runner,
            scheduling_strategy=shape.scheduling_strategy,
            max_wait_seconds=shape.max_wait_seconds,
            fallbacks=upstream("fallbacks", [dict(f) for f in shape.fallbacks]) if shape.fallbacks else None,
            max_cost_usd=shape.max_cost_usd,
            fallback_regions=upstream("fallback_regions", list(shape.fallback_regions))
            if shape.fallback_regions
            else None,
            reservation_affinity=upstream("reservation_affinity", shape.reservation_affinity)
            if shape.reservation_affinity
            else None,
            capacity_deadline_seconds=upstream("capacity_deadline_seconds", shape.capacity_deadline_seconds),
        ),
    )
    return job.job_name


def recorded(shape: JobShape, *, preview: bool) -> struct_pb2.Struct:
    """The RegisterResource inputs of the CustomJob, as the SDK sent them to the engine."""
    run = run_program(lambda: _program(shape), stack="dev", preview=preview)
    return run.one(RESOURCE_TYPE).struct


def known(shape: JobShape) -> JobShape:
    """The same job with every upstream value known (a `pulumi up` after the upstream resources exist)."""
    return replace(shape, unknown=frozenset())
