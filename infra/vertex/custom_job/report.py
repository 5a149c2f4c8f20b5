"""What a training job took and gave: the duration/cost/metrics outputs, and the line that ends a wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infra.dynamic.polling import duration_text
from infra.vertex.cost import pricing
from infra.vertex.custom_job.metrics import read_metrics
from infra.vertex.lifecycle import cap as cost_cap
from infra.vertex.lifecycle import spend
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.lifecycle.output_files import model_dir
from infra.vertex.lifecycle.request import Placed
from infra.vertex.lifecycle.restarts import Attempt
from infra.vertex.lifecycle.status import JobStatus


def run_outputs(placed: Placed, status: JobStatus, warn: Callable[[str], None]) -> dict[str, Any]:
    """duration_seconds (all attempts), estimated_cost_usd (Vertex, list prices, each attempt at its shape:
    the figure the dollar cap counts, spend.py; absent when some running time has no price), metrics
    (succeeded). `placed`: the request on the shape the job `status` runs on."""
    seconds = Attempt.of(status).total_seconds(status)
    outputs: dict[str, Any] = {"duration_seconds": round(seconds, 1)}
    if placed.request.on_vertex:
        total = spend.spent(placed.rate, status)
        if total.known_usd is not None:
            outputs["estimated_cost_usd"] = total.known_usd
            if total.bound:  # some of it is a Spot/FLEX_START shape's on-demand bound: at most this
                outputs["estimated_cost_bound"] = True
    if status.state == "JOB_STATE_SUCCEEDED":
        models = model_dir(placed.request.common.output_dir)
        try:
            metrics = read_metrics(models)
        except Exception as exc:  # metrics are optional: they never fail a finished run
            warn(f"could not read {models}metrics.json: {exc}")
            metrics = None
        if metrics is not None:
            outputs["metrics"] = metrics
    return outputs


def summary_line(outcome: Outcome, ran: Placed) -> str:
    """E.g. `JOB_STATE_SUCCEEDED after 12m 31s running (2 attempts); val_accuracy 0.9312; ... USD 0.88`;
    `ran`: the request on the shape the job ran on."""
    parts = [f"{outcome.state} after {duration_text(outcome.get('duration_seconds'))} running"]
    if len(outcome.attempts) > 1:
        parts[0] += f" ({len(outcome.attempts)} attempts)"
    metrics = outcome.get("metrics") or {}
    shown = {k: metrics[k] for k in ("val_accuracy", "val_loss") if isinstance(metrics.get(k), int | float)}
    if shown:
        parts.append(" ".join(f"{k} {v:.4f}" for k, v in shown.items()))
    cost = outcome.get("estimated_cost_usd")
    if cost is not None:
        kind = ran.strategy
        if outcome.get("estimated_cost_bound"):
            words = pricing.bound_words(kind) if kind in pricing.BELOW_ON_DEMAND else "on-demand prices"
            parts.append(f"estimated cost at most USD {cost:.2f} ({words})")
        else:
            parts.append(f"estimated cost USD {cost:.2f} ({kind} list prices)")
        capped = cost_cap.summary(outcome)
        if capped:
            parts.append(capped)
    elif ran.request.on_vertex:
        unpriced = pricing.missing(ran.region or "", ran.pools, ran.strategy)
        parts.append(f"no cost estimate (no price for {', '.join(unpriced) or 'an item'})")
    return "; ".join(parts)
