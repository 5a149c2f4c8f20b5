"""What a run took and gave: the duration/cost/metrics outputs, and the one-line summary that ends a wait."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from infra.vertex import cost_cap, placement, pricing, spec
from infra.vertex.heartbeat import duration_text
from infra.vertex.job_metrics import read_metrics
from infra.vertex.placement import AttemptRecord
from infra.vertex.restarts import Attempt, running_seconds
from infra.vertex.status import JobStatus


def current_record(props: dict[str, Any], status: JobStatus) -> AttemptRecord:
    """The attempt a status is, on the shape the job itself carries (placement.job_shape)."""
    index, shape = placement.job_shape(status, props)
    return AttemptRecord(index, shape, status.name, status.state, "", running_seconds(status))


def carried_attempts(stored: dict[str, Any], current: AttemptRecord) -> list[dict[str, Any]]:
    """The stored `attempts` with the current job's entry brought up to date (appended when missing)."""
    attempts = list(stored.get("attempts") or [])
    names = [a.get("job_name") for a in attempts]
    if current.job_name in names:
        attempts[names.index(current.job_name)] = current.as_output()
        return attempts
    return [*attempts, current.as_output()]


def carried_cost(
    props: dict[str, Any], stored: dict[str, Any], current: AttemptRecord, total_seconds: float
) -> float | None:
    """Cost of every attempt when only the current job can be read (read, update): the stored cost of the
    earlier attempts (stored cost less the current job's share when stored) plus the current job's now."""
    earlier = total_seconds - current.seconds
    same_job = stored.get("job_name") == current.job_name
    if earlier < 1 or not same_job or not {"estimated_cost_usd", "duration_seconds"} <= stored.keys():
        return attempts_cost(props, [current], total_seconds)
    then = max(0.0, float(stored["duration_seconds"]) - earlier)
    before = attempts_cost(props, [replace(current, seconds=then)], then)
    now = attempts_cost(props, [current], current.seconds)
    if before is None or now is None:
        return None
    return round(float(stored["estimated_cost_usd"]) - before + now, 4)


def attempts_cost(
    props: dict[str, Any], records: Sequence[AttemptRecord], total_seconds: float
) -> float | None:
    """List-price cost of every attempt at the shape it ran on; None when a price is unknown.

    Running time before the first record (attempts of an earlier provider process, known only as a total
    from the attempt label) is priced only when it can only have been the primary shape: shapes are tried in
    order, so that is when the first record is on the primary.
    """
    parts = [(r.shape, r.seconds) for r in records if r.seconds > 0]
    unseen = total_seconds - sum(r.seconds for r in records)
    if unseen >= 1:
        if records[0].shape_index != 0:
            return None
        parts.append((records[0].shape, unseen))
    total = 0.0
    for shape, seconds in parts:
        pools = placement.apply_shape(props, shape)["worker_pools"]
        cost = pricing.estimate_usd(
            props["region"], pools, shape.scheduling_strategy, seconds, props.get("project")
        )
        if cost is None:
            return None
        total += cost
    return round(total, 4)


def run_outputs(
    props: dict[str, Any],
    status: JobStatus,
    warn: Callable[[str], None],
    records: Sequence[AttemptRecord] = (),
    stored: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """duration_seconds (all attempts), estimated_cost_usd (Vertex, listed prices, each attempt at its
    shape), metrics (succeeded). `records`: the attempts this process saw, the last one `status`; with only
    that one, `stored` (the earlier outputs) holds the cost of attempts before it."""
    seconds = Attempt.of(status).total_seconds(status)
    outputs: dict[str, Any] = {"duration_seconds": round(seconds, 1)}
    if props.get("runner") == "vertex":
        records = records or [current_record(props, status)]
        if len(records) == 1 and stored:
            cost = carried_cost(props, stored, records[0], seconds)
        else:
            cost = attempts_cost(props, records, seconds)
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
