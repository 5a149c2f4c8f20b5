"""Machine shapes for one job: the primary and its fallbacks, applied to worker pools, tried in order.

A shape is what a fallback may change (machine type, accelerator type and count, scheduling strategy); the
rest of the job (image, args, replica counts, output directory, so its checkpoints) stays. `try_shapes` is
the loop: it asks a caller-supplied `run` to place each shape in turn and moves on while a shape gives way
(no quota, a stockout, still queued at its deadline); it knows no runner, so a tuning job can reuse it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.cloud import aiplatform_v1

from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.restarts import Attempt
from infra.vertex.lifecycle.status import JobStatus

STRATEGIES = ("STANDARD", "SPOT", "FLEX_START")
SHAPE_KEYS = ("machine_type", "accelerator_type", "accelerator_count", "scheduling_strategy")
# Where the user can act when no shape could run (the quota page, another region, Dynamic Workload Scheduler).
QUOTAS_URL = (
    "https://console.cloud.google.com/iam-admin/quotas?project={project}&service=aiplatform.googleapis.com"
)
DWS_DOC = "https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws"


@dataclass(frozen=True)
class Shape:
    """The chief's machine (and every accelerator pool's), and how Vertex provisions it."""

    machine_type: str
    accelerator_type: str | None
    accelerator_count: int
    scheduling_strategy: str

    def as_dict(self) -> dict[str, Any]:
        """The contract's `placement`: the four keys of a fallback (accelerator_type "" for CPU)."""
        return {
            "machine_type": self.machine_type,
            "accelerator_type": self.accelerator_type or "",
            "accelerator_count": self.accelerator_count,
            "scheduling_strategy": self.scheduling_strategy,
        }

    def __str__(self) -> str:
        gpus = f" + {self.accelerator_count} x {self.accelerator_type}" if self.accelerator_type else ""
        return f"{self.machine_type}{gpus} ({self.scheduling_strategy})"


def default_strategy(props: Mapping[str, Any]) -> str:
    """SPOT when `spot` is true, else STANDARD (the contract's default for scheduling_strategy)."""
    return "SPOT" if props.get("spot") else "STANDARD"


def primary_shape(props: Mapping[str, Any]) -> Shape:
    chief = props["worker_pools"][0]
    return Shape(
        machine_type=chief["machine_type"],
        accelerator_type=chief.get("accelerator_type") or None,
        accelerator_count=int(chief.get("accelerator_count") or 0),
        scheduling_strategy=props.get("scheduling_strategy") or default_strategy(props),
    )


def resolve(fallback: Mapping[str, Any], primary: Shape) -> Shape:
    """A fallback entry with every key it leaves out taken from the primary shape. `accelerator_count: 0`
    without an accelerator_type is a CPU-only shape (the primary's accelerator is not kept)."""
    count = int(fallback.get("accelerator_count", primary.accelerator_count))
    kind = fallback.get("accelerator_type", primary.accelerator_type if count else None)
    return Shape(
        machine_type=fallback.get("machine_type", primary.machine_type),
        accelerator_type=kind or None,
        accelerator_count=count,
        scheduling_strategy=fallback.get("scheduling_strategy", primary.scheduling_strategy),
    )


def spec_shape(job: aiplatform_v1.CustomJob) -> dict[str, Any]:
    """The shape a submitted job carries (its chief's machine spec and its strategy), for JobStatus.shape;
    empty when the spec names no strategy this module knows (then the attempt label says the shape)."""
    strategy = job.job_spec.scheduling.strategy.name
    pools = job.job_spec.worker_pool_specs
    if strategy not in STRATEGIES or not pools:
        return {}
    machine = pools[0].machine_spec
    count = int(machine.accelerator_count)
    return {
        "machine_type": machine.machine_type,
        "accelerator_type": machine.accelerator_type.name if count else "",
        "accelerator_count": count,
        "scheduling_strategy": strategy,
    }


def job_shape(status: JobStatus, props: Mapping[str, Any]) -> tuple[int, Shape]:
    """The shape a job ran on, from the job itself; the index is its attempt label's (which fallback it was
    submitted as). Only a job that carries no shape is looked up by that index in the current chain."""
    chain = shapes(props)
    index = min(Attempt.of(status).shape, len(chain) - 1)
    found = status.shape
    if not found:
        return index, chain[index]
    return index, Shape(
        machine_type=found["machine_type"],
        accelerator_type=found["accelerator_type"] or None,
        accelerator_count=int(found["accelerator_count"]),
        scheduling_strategy=found["scheduling_strategy"],
    )


def resume_index(status: JobStatus, props: Mapping[str, Any]) -> int:
    """Where the chain goes on from an adopted job: its own shape's place in the current (maybe edited)
    chain, else the place its label names."""
    chain = shapes(props)
    index, shape = job_shape(status, props)
    return chain.index(shape) if shape in chain else index


def shapes(props: Mapping[str, Any]) -> list[Shape]:
    """The primary shape, then each fallback in order."""
    primary = primary_shape(props)
    return [primary, *(resolve(entry, primary) for entry in props.get("fallbacks") or [])]


def apply_shape(props: Mapping[str, Any], shape: Shape) -> dict[str, Any]:
    """Props for running on `shape`: the chief and every pool with accelerators get its machine; replica
    counts, images and args stay; `spot` follows the strategy."""
    pools = []
    for index, pool in enumerate(props["worker_pools"]):
        if index == 0 or int(pool.get("accelerator_count") or 0) > 0:
            pool = {**pool, "machine_type": shape.machine_type, "accelerator_count": shape.accelerator_count}
            if shape.accelerator_type:
                pool["accelerator_type"] = shape.accelerator_type
            else:
                pool.pop("accelerator_type", None)
        pools.append(pool)
    return {
        **props,
        "worker_pools": pools,
        "scheduling_strategy": shape.scheduling_strategy,
        "spot": shape.scheduling_strategy == "SPOT",
    }


@dataclass(frozen=True)
class AttemptRecord:
    """One submitted job (or one shape skipped without a job): the contract's `attempts` entry, plus the
    running seconds that its cost is computed from."""

    shape_index: int
    shape: Shape
    job_name: str
    state: str
    reason: str
    seconds: float = 0.0

    def as_output(self) -> dict[str, Any]:
        return {"job_name": self.job_name, **self.shape.as_dict(), "state": self.state, "reason": self.reason}


@dataclass
class ShapeResult:
    """What running one shape gave: its records, the last job's status, and whether to try the next shape.

    `error` is what to raise when this shape's failure is final, or when it was the only shape.
    """

    records: list[AttemptRecord]
    status: JobStatus | None = None
    move_on: bool = False
    error: JobError | None = None


def one_line(text: str) -> str:
    """API texts may hold newlines: a move is one line and the final error one paragraph."""
    return " ".join(text.split())


def move_line(left: Shape, reason: str, following: Shape) -> str:
    """The one stderr line for a move: the shape left, why, the shape tried next."""
    return f"leaving {left}: {one_line(reason)}; trying next: {following}"


def exhausted_message(
    props: Mapping[str, Any], records: Sequence[AttemptRecord], kind: str = "Training job"
) -> str:
    """One paragraph when every shape gave way: each attempt with its reason, and what to do."""
    project, region = props.get("project"), props.get("region")
    tried = "; ".join(
        f"{n}. {r.shape} {'(' + r.job_name + ') ' if r.job_name else ''}{r.state}: {one_line(r.reason)}"
        for n, r in enumerate(records, 1)
    )
    return (
        f"{kind} {props.get('display_name')} could not get machines in {region}: every shape was "
        f"tried. {tried}. What to do: request the custom_model_training quotas for these shapes at "
        f"{QUOTAS_URL.format(project=project)} (new projects start at 0; Spot and FLEX_START use the "
        "Preemptible quotas), add fallbacks (stack config key `fallbacks`) with other machines or "
        "on-demand VMs, use FLEX_START (Dynamic Workload Scheduler: the job waits in a queue for L4, A100, "
        f"H100, H200 or B200 GPUs; {DWS_DOC}), allow a longer wait (queueTimeoutSeconds, maxWaitSeconds), "
        "or move the stack to another region (docs/training-job-resource.md)."
    )


def still_live_message(status: JobStatus, waited_seconds: float) -> str:
    """Why no other shape is tried: the job cancelled at its queue limit has not ended yet."""
    return (
        f"Training job {status.name} was cancelled at its queue limit but is still {status.state} "
        f"{waited_seconds:.0f}s later, so no other shape was submitted (two jobs would share its checkpoints "
        f"and both be billed). Check {status.console_url}; once it has ended, run `pulumi up` again."
    )


def try_shapes(
    chain: Sequence[Shape],
    start: int,
    run: Callable[[int, Shape], ShapeResult],
    say: Callable[[str], None],
    exhausted: Callable[[list[AttemptRecord]], Exception],
) -> tuple[int, ShapeResult, list[AttemptRecord]]:
    """Run chain[start:] in order until a shape does not give way; return its index, result and all records.

    A final failure raises that shape's error; so does a chain of one shape that gave way (nothing else was
    tried); otherwise giving way on every shape raises `exhausted(records)`.
    """
    records: list[AttemptRecord] = []
    for index in range(start, len(chain)):
        result = run(index, chain[index])
        records.extend(result.records)
        if not result.move_on:
            return index, result, records
        if index + 1 < len(chain):
            say(move_line(chain[index], result.records[-1].reason, chain[index + 1]))
    if len(chain) - start == 1 and result.error is not None:
        raise result.error
    raise exhausted(records)
