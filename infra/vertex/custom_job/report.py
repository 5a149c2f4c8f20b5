"""What a training job took and gave: the duration/cost/metrics outputs, and the line that ends a wait."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from infra.dynamic.polling import duration_text
from infra.vertex.cost import pricing
from infra.vertex.lifecycle import cap as cost_cap
from infra.vertex.lifecycle import spend
from infra.vertex.lifecycle.outcome import SPARSE, Outcome, Ran
from infra.vertex.lifecycle.output_files import join, model_dir, read_text
from infra.vertex.lifecycle.request import Placed
from infra.vertex.lifecycle.restarts import Attempt
from infra.vertex.lifecycle.status import JobStatus

METRICS_FILE = "metrics.json"


@dataclass(frozen=True, kw_only=True)
class TrainingOutputs(Ran):
    """A training job's own outputs: its model directory and, once it succeeded, its metrics."""

    model_dir: str = ""
    metrics: dict[str, Any] | None = field(default=None, metadata=SPARSE)


def read_metrics(directory: str) -> dict[str, Any] | None:
    """metrics.json in a model directory (a local path, or gs:// via Storage); None: the job wrote none."""
    text = read_text(join(directory, METRICS_FILE))
    value = None if text is None else json.loads(text)
    return value if isinstance(value, dict) else None


def run_outputs(placed: Placed, status: JobStatus, warn: Callable[[str], None]) -> TrainingOutputs:
    """The outputs of the job `status` on `placed`'s shape: running time (all attempts), cost at list prices
    as the dollar cap counts it (spend.py; None when some time has no price), metrics once it succeeded."""
    models = model_dir(placed.request.common.output_dir)
    total = spend.spent(placed.rate, status) if placed.request.on_vertex else None
    metrics = None
    if status.state == "JOB_STATE_SUCCEEDED":
        try:
            metrics = read_metrics(models)
        except Exception as exc:  # metrics are optional: they never fail a finished run
            warn(f"could not read {models}metrics.json: {exc}")
    return TrainingOutputs(
        duration_seconds=round(Attempt.of(status).total_seconds(status), 1),
        estimated_cost_usd=total.known_usd if total else None,
        # Some of it is a Spot/FLEX_START shape's on-demand bound: at most this.
        estimated_cost_bound=bool(total and total.known_usd is not None and total.bound),
        model_dir=models,
        metrics=metrics,
    )


def summary_line(outcome: Outcome[TrainingOutputs], ran: Placed) -> str:
    """E.g. `JOB_STATE_SUCCEEDED after 12m 31s running (2 attempts); val_accuracy 0.9312; ... USD 0.88`;
    `ran`: the request on the shape the job ran on."""
    own = outcome.own
    parts = [f"{outcome.state} after {duration_text(own.duration_seconds)} running"]
    if len(outcome.attempts) > 1:
        parts[0] += f" ({len(outcome.attempts)} attempts)"
    metrics = own.metrics or {}
    shown = {k: metrics[k] for k in ("val_accuracy", "val_loss") if isinstance(metrics.get(k), int | float)}
    if shown:
        parts.append(" ".join(f"{k} {v:.4f}" for k, v in shown.items()))
    cost = own.estimated_cost_usd
    if cost is not None:
        parts.append(pricing.cost_words(cost, own.estimated_cost_bound, ran.strategy))
        capped = cost_cap.summary(outcome)
        if capped:
            parts.append(capped)
    elif ran.request.on_vertex:
        unpriced = pricing.missing(ran.region or "", ran.pools, ran.strategy)
        parts.append(f"no cost estimate (no price for {', '.join(unpriced) or 'an item'})")
    return "; ".join(parts)
