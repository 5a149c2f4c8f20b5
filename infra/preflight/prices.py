"""The price limits ahead of time: which shapes of each Vertex job `up` would skip under maxCostUsd (no
sourced price) or maxHourlyUsd (priced above it), and a chain left with none (cost/limits.py decides).

Prices are read as `up` reads them: the Cloud Billing Catalog with the caller's credentials where it answers,
else the cited table (cost/pricing.py); without credentials, the table alone.
"""

from __future__ import annotations

from typing import Any

from infra.config import StackConfig
from infra.preflight import demand
from infra.preflight.checks import _set
from infra.preflight.results import Result, missing, note, ok
from infra.vertex.capacity import placement
from infra.vertex.cost import limits


def job_props(cfg: StackConfig) -> list[tuple[str, dict[str, Any]]]:
    """(name, props) of the data job (unless dataSource is none) and the training job, with the cost keys."""
    cost = {k: v for k, v in cfg.cost.job_args().items() if v is not None}
    found = []
    if cfg.data.source != "none":
        pools = [{"machine_type": cfg.data_machine_type, "accelerator_count": 0, "replica_count": 1}]
        data = {"project": cfg.gcp_project, "region": cfg.region, "runner": cfg.runner, "spot": cfg.spot}
        found.append(("data-preparation job", {**data, **cost, "worker_pools": pools}))
    found.append(("training job", {**demand.training_props(cfg), **cost}))
    return found


def check(name: str, props: dict[str, Any], stack: str) -> Result:
    """ok when every shape may run; a note naming the shapes `up` skips; missing when none is left."""
    item = f"prices of the {name}"
    if not limits.limited(props):
        return ok(item, "runs on this machine: nothing billed")
    chain = placement.shapes(props)
    verdicts = [limits.verdict(props, index, shape, chain) for index, shape in enumerate(chain)]
    skipped = [
        f"{shape.where()}: {found.skipped}"
        for shape, found in zip(chain, verdicts, strict=True)
        if found.skipped is not None
    ]
    if not skipped:
        return ok(item, f"every shape of its chain ({len(chain)}) may run under the stack's price limits")
    # Advice only (the job still runs on the shapes left, or `up` refuses it: the refusal's own line says
    # so, in the plan's words): no fix line.
    return note(item, f"`up` skips {len(skipped)} of its {len(chain)} shapes: " + "; ".join(skipped))


def refusal_fix(prop: str, stack: str) -> str:
    """The command for a price limit that leaves a job no shape; else where the input comes from."""
    if prop.endswith("max_cost_usd"):
        return _set("allowUnpricedShapes", "true", stack)
    if prop.endswith("max_hourly_usd"):
        return _set("maxHourlyUsd", "<USD per hour, at least the cheapest shape's>", stack)
    return f"fix the stack key this input comes from (`make plan STACK={stack}` shows the job)"


def refusals(cfg: StackConfig) -> list[Result]:
    """What `pulumi up` would refuse, as `make plan` says it (plan/verdict.py): the stack's program run
    offline, each job's inputs through its provider's own check, priced as this process reads prices."""
    from infra.plan import verdict

    programmed = verdict.program(cfg)
    return [
        missing("pulumi up", verdict.refusal_line(name, prop, reason), refusal_fix(prop, cfg.stack))
        for name, prop, reason in verdict.refusals([*programmed.jobs, *programmed.serving])
    ]


def results(cfg: StackConfig) -> list[Result]:
    """One result per Vertex job of the stack, then each refusal of `up`."""
    return [*(check(name, props, cfg.stack) for name, props in job_props(cfg)), *refusals(cfg)]
