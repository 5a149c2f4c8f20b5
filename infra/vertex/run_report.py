"""What a run took and gave: the duration/cost/metrics outputs, and the one-line summary that ends a wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infra.vertex import cost_cap, pricing, spec
from infra.vertex.heartbeat import duration_text
from infra.vertex.job_metrics import read_metrics
from infra.vertex.restarts import Attempt
from infra.vertex.status import JobStatus


def run_outputs(props: dict[str, Any], status: JobStatus, warn: Callable[[str], None]) -> dict[str, Any]:
    """duration_seconds (all attempts), estimated_cost_usd (Vertex, listed prices), metrics (succeeded)."""
    seconds = Attempt.of(status).total_seconds(status)
    outputs: dict[str, Any] = {"duration_seconds": round(seconds, 1)}
    if props.get("runner") == "vertex":
        strategy = pricing.props_strategy(props)
        cost = pricing.estimate_usd(
            props["region"], props["worker_pools"], strategy, seconds, props.get("project")
        )
        if cost is not None:
            outputs["estimated_cost_usd"] = cost
    if status.state == "JOB_STATE_SUCCEEDED":
        model_dir = spec.model_dir(props["base_output_dir"])
        try:
            metrics = read_metrics(model_dir)
        except Exception as exc:  # metrics are optional: they never fail a finished run
            warn(f"could not read {model_dir}metrics.json: {exc}")
            metrics = None
        if metrics is not None:
            outputs["metrics"] = metrics
    return outputs


def summary_line(outputs: dict[str, Any], attempts: int) -> str:
    """E.g. `JOB_STATE_SUCCEEDED after 12m 31s running (2 attempts); val_accuracy 0.9312; ... USD 0.88`."""
    parts = [f"{outputs['state']} after {duration_text(outputs['duration_seconds'])} running"]
    if attempts > 1:
        parts[0] += f" ({attempts} attempts)"
    metrics = outputs.get("metrics") or {}
    shown = {k: metrics[k] for k in ("val_accuracy", "val_loss") if isinstance(metrics.get(k), int | float)}
    if shown:
        parts.append(" ".join(f"{k} {v:.4f}" for k, v in shown.items()))
    if "estimated_cost_usd" in outputs:
        kind = pricing.props_strategy(outputs)
        parts.append(f"estimated cost USD {outputs['estimated_cost_usd']:.2f} ({kind} list prices)")
        capped = cost_cap.summary(outputs)
        if capped:
            parts.append(capped)
    elif outputs.get("runner") == "vertex":
        unpriced = pricing.missing(
            outputs["region"], outputs["worker_pools"], pricing.props_strategy(outputs)
        )
        parts.append(f"no cost estimate (no price for {', '.join(unpriced) or 'an item'})")
    return "; ".join(parts)
