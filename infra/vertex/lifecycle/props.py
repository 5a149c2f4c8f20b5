"""The props the shared lifecycle reads, whatever the job kind: what a kind's spec must provide, typed.

Props travel as plain dicts (Pulumi's wire format, pickled state); this is their documented view. A kind's
`with_defaults` fills the defaulted ones and `checks.common_failures` checks them; everything else in a
kind's props is the kind's own (its request, its outputs). `docs/extending.md` lists the same.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict


class Fallback(TypedDict, total=False):
    """One alternative shape (capacity/placement.py): keys left out are taken from the job's own."""

    machine_type: str
    accelerator_type: str
    accelerator_count: int
    region: str
    scheduling_strategy: str  # training kinds only
    reservation_affinity: dict[str, str]  # training kinds only


class LifecycleProps(TypedDict, total=False):
    """What placing.py, waiting.py, job_provider.py and the cost cap read from a job's props."""

    runner: Required[str]  # "vertex" | "local" (default "vertex")
    display_name: Required[str]  # the job's name on Vertex and in every message
    labels: Required[dict[str, str]]  # the provider adds the key label (checks.KEY_LABEL)
    wait: Required[bool]  # create returns only once the job is terminal
    poll_interval_seconds: Required[float]  # the first poll interval
    queue_timeout_seconds: Required[int]  # how long the job may wait to start before it is cancelled
    timeout_seconds: Required[int]  # the running-time cap (the kind's run_deadline reads it)
    project: str  # required for the vertex runner, as are region and service_account
    region: str
    service_account: str
    # The kind's output location, under the name its JobKind.output_key gives ("base_output_dir",
    # "output_dir"): gs:// on Vertex; the local runner's records and run.json go there.
    base_output_dir: str
    output_dir: str
    # A job's machines: `worker_pools` (training kinds), or its own machine keys (placement.pools).
    worker_pools: list[dict[str, Any]]
    machine_type: str
    accelerator_type: str
    accelerator_count: int
    max_replica_count: int
    fallbacks: list[Fallback]  # tried in order when a shape cannot get machines
    fallback_regions: list[str]  # training kinds: the chain again in each region
    capacity_deadline_seconds: int  # go round the chain again until this many seconds have passed
    max_cost_usd: float  # cancelled when the running cost reaches it (where the shape has a price)
    scheduling_strategy: str  # STANDARD (default), SPOT, FLEX_START: training kinds
    spot: bool
    max_wait_seconds: int  # FLEX_START only
    max_restarts: int  # resumable kinds: resubmissions after a preemption while running


REQUIRED = frozenset(LifecycleProps.__required_keys__)
# The outputs job_provider.py gives every kind (a kind's OUTPUTS adds its own: model_dir, trials, ...).
SHARED_OUTPUTS = (
    "job_name",
    "state",
    "console_url",
    "create_time",
    "start_time",
    "end_time",
    "error",
    "placement",
    "attempts",
)
