"""A stack's plan: what `pulumi up` would create and what its jobs may cost, as text or as one JSON object."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from infra.config.reader import ConfigError
from infra.plan import verdict
from infra.plan.jobs import PlannedJob, PlannedShape
from infra.plan.program import Declared
from infra.plan.serving import PlannedServing
from infra.vertex.cost import pricing

# Where the figures come from: the plan never reads the Billing Catalog (it is made offline).
PRICE_SOURCE = (
    f"list prices from the Vertex AI price list ({pricing.PRICE_LIST_URL}), figures as read on "
    f"{pricing.PRICE_LIST_READ}; the Cloud Billing Catalog is not read offline: at `pulumi preview` and `up` "
    "it overrides the table where it answers, and may price a shape skipped here"
)
NOT_COUNTED = "storage, network, image builds and the model registry are not counted"


@dataclass(frozen=True)
class Plan:
    stack: str
    project: str
    resources: tuple[Declared, ...]
    jobs: tuple[PlannedJob, ...]
    notes: tuple[str, ...] = ()
    images: tuple[tuple[str, str], ...] = ()  # (name, repository/image:content-tag) the stack builds
    serving: tuple[PlannedServing, ...] = ()  # the online deployment (vertex-training:endpoint), if any

    @property
    def worst_case_usd(self) -> float | None:
        """Every job's worst case together (one `pulumi up` runs them all); None when one is unknown."""
        worst = [job.worst_case_usd for job in self.jobs]
        if any(w is None for w in worst):
            return None
        return sum(w for w in worst if w is not None)

    @property
    def failures(self) -> list[str]:
        """What the providers' checks would refuse, one line each (as preflight prints them)."""
        return [verdict.refusal_line(*found) for found in verdict.refusals([*self.jobs, *self.serving])]


def as_json(plan: Plan) -> str:
    worst = plan.worst_case_usd
    return json.dumps(
        {
            "stack": plan.stack,
            "project": plan.project,
            "resources": [{"type": r.type, "name": r.name} for r in plan.resources],
            "images": [{"name": name, "uri": uri} for name, uri in plan.images],
            "jobs": [job.as_json() for job in plan.jobs],
            "worst_case_usd": None if worst is None else round(worst, 2),
            "serving": [s.as_json() for s in plan.serving],
            "notes": list(plan.notes),
            "errors": [
                {"key": f"{job.name}.{prop}", "problem": reason, "fix": "fix the stack key it comes from"}
                for job in plan.jobs
                for prop, reason in job.failures
            ],
        },
        indent=2,
    )


def _usd(value: float | None) -> str:
    return f"USD {value:.2f}"


def _hourly(job: PlannedJob, shape: PlannedShape) -> str:
    machines = f" for {shape.replicas} machines" if shape.replicas > 1 else ""
    if job.local:
        return "nothing billed"
    if shape.skipped is not None and shape.hourly_usd is None:
        items = ", ".join(item.split(" (", 1)[0] for item in shape.missing)
        return f"skipped ({shape.skip_key}**): no sourced price for {items}"
    if shape.skipped is not None:
        return f"skipped ({shape.skip_key}): {shape.skipped}"
    if shape.hourly_usd is None:
        # pricing.missing names `item (region, strategy)`; the line shows the region and strategy already.
        return f"no sourced price for {', '.join(item.split(' (', 1)[0] for item in shape.missing)}"
    if shape.bound:
        return f"at most USD {shape.hourly_usd:.2f}/h{machines} (on-demand bound*)"
    return f"USD {shape.hourly_usd:.2f}/h{machines}"


def _job_lines(index: int, job: PlannedJob) -> list[str]:
    timeout = f", timeout {job.timeout_seconds}s" if job.timeout_seconds else ""
    lines = [f"{index}. {job.name} ({job.kind}{', local runner' if job.local else ''}{timeout})"]
    if job.failures:
        return lines + [f"     refused by check: {prop}: {reason}" for prop, reason in job.failures]
    width = max((len(shape.name) for shape in job.shapes), default=0)
    for shape in job.shapes:
        gpu = f"{shape.accelerator_type} x {shape.accelerator_count}" if shape.accelerator_count else "no GPU"
        where = "this machine" if job.local else shape.region
        lines.append(
            f"     {shape.name:<{width}}  {shape.machine_type}, {gpu}, {shape.scheduling_strategy}, {where}: "
            f"{_hourly(job, shape)}"
        )
    if job.worst_case_usd is not None:
        lines.append(f"     worst case: {_usd(job.worst_case_usd)}")
    else:
        unpriced = [shape.name for shape in job.shapes if shape.hourly_usd is None]
        why = (
            f"{', '.join(unpriced)} without a sourced price"
            if unpriced
            else "not stated for this kind of job"
        )
        lines.append(f"     worst case: unknown ({why})")
    unpriced = [s.name for s in job.shapes if s.hourly_usd is None and s.skipped is None]
    if job.max_cost_usd is not None and not job.local:
        # lifecycle/cap.py counts a shape's price or bound; without allowUnpricedShapes an unpriced shape is
        # skipped (cost/limits.py), so the cap counts every shape the job may run on.
        held = (
            f" (allowUnpricedShapes: true: time on {', '.join(unpriced)} is not counted)" if unpriced else ""
        )
        lines.append(f"     cap: {_usd(job.max_cost_usd)}, maxCostUsd: cancelled at that running cost{held}")
    elif job.allow_unpriced_shapes and unpriced and not job.local:
        lines.append(f"     allowUnpricedShapes: true: {', '.join(unpriced)} run without a sourced price")
    return lines


def _footnotes(plan: Plan) -> list[str]:
    """Why an on-demand price bounds a Spot or FLEX_START shape, once per strategy shown as one."""
    strategies = sorted(
        {
            shape.scheduling_strategy
            for job in plan.jobs
            for shape in job.shapes
            if shape.bound and not job.local
        }
    )
    lines = [f"* {strategy}: {pricing.bound_words(strategy)}" for strategy in strategies]
    if any(shape.skipped and shape.hourly_usd is None for job in plan.jobs for shape in job.shapes):
        lines.append(
            "** a shape without a sourced price is skipped when the job is about to run on it: its time "
            "could not be counted (maxCostUsd) nor held to maxHourlyUsd; the Billing Catalog read at `up` "
            "may price it, and allowUnpricedShapes: true runs it uncounted"
        )
    return lines


def as_text(plan: Plan) -> str:
    lines = [
        f"Plan for stack {plan.stack} (project {plan.project}), made offline: nothing was read from Google."
    ]
    lines += [f"NOTE: {note}" for note in plan.notes]
    lines += [
        "",
        f"`pulumi up` would create {len(plan.resources)} resources (type, name; components included):",
    ]
    width = max((len(r.type) for r in plan.resources), default=0)
    lines += [f"  {r.type:<{width}}  {r.name}" for r in plan.resources]
    if plan.images:
        lines += ["", "Images it builds (tagged by their content here; `pulumi up` pins each by digest):"]
        lines += [f"  {name:<8} {uri}" for name, uri in plan.images]
    lines += [
        "",
        "Jobs, in the order they run (each shape: machine, GPU x count, strategy, region, hourly price):",
    ]
    for index, job in enumerate(plan.jobs, start=1):
        lines += _job_lines(index, job)
    worst = plan.worst_case_usd
    unknown = [job.name for job in plan.jobs if job.worst_case_usd is None]
    lines += [
        "",
        "Worst case of the stack's jobs: "
        + (_usd(worst) if worst is not None else f"unknown (no worst case for {', '.join(unknown)})")
        + f": every job to its timeout on its dearest shape, all attempts; {NOT_COUNTED}.",
        *([f"Prices: {PRICE_SOURCE}."] if any(not job.local for job in plan.jobs) else []),
        *_footnotes(plan),
    ]
    if plan.serving:
        lines += [
            "",
            "Online serving (billed every hour it is deployed, requests or not; not in the worst case):",
        ]
        for serving in plan.serving:
            lines += serving.lines()
    if plan.failures:
        lines += ["", *(f"ERROR: {line}" for line in plan.failures)]
        lines += ["Fix the stack keys these inputs come from (`make preflight` says the same)."]
    return "\n".join(lines)


def errors_json(stack: str, errors: Sequence[ConfigError]) -> str:
    """The plan's object with nothing planned (the file could not be read) and each problem."""
    found = [{"key": e.name, "problem": e.problem, "fix": e.fix} for e in errors]
    empty: dict[str, object] = {
        "project": None,
        "resources": [],
        "jobs": [],
        "worst_case_usd": None,
        "notes": [],
        "images": [],
    }
    return json.dumps({"stack": stack, **empty, "errors": found}, indent=2)


def errors_text(stack: str, errors: Sequence[ConfigError]) -> str:
    head = f"Stack {stack}: {len(errors)} problem{'s' if len(errors) > 1 else ''} in its configuration:"
    return "\n".join([head, *(f"- {e.name}: {e.problem}.\n  Fix: {e.fix}" for e in errors)])
