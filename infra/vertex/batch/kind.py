"""The BatchPredictionJob as a kind of the shared lifecycle: a model classifying a bucket of images (only what
differs from the other kinds: its instances file, its running-time cap, its outputs and closing line)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions

from infra.commands import python_m
from infra.dynamic.polling import duration_text
from infra.vertex.batch import instances, results, spec
from infra.vertex.capacity.quotas import quota_page
from infra.vertex.cost import limits
from infra.vertex.cost import preview as cost_preview
from infra.vertex.lifecycle import restarts, spend, waiting
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.kind import Kind
from infra.vertex.lifecycle.outcome import Outcome, Ran
from infra.vertex.lifecycle.output_files import files_under
from infra.vertex.lifecycle.request import JobRequest, Placed
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.batch_status import BatchStatus
from infra.vertex.runners.local.batch_runner import LocalBatchRunner
from infra.vertex.runners.vertex_batch import VertexBatchRunner
from infra.vertex.serving_container import unservable


@dataclass(frozen=True, kw_only=True)
class BatchOutputs(Ran):
    """A batch prediction's own outputs: where its predictions are and Vertex's completion counts."""

    predictions_dir: str = ""
    completion_stats: dict[str, int] = field(default_factory=dict)


class BatchPredictionKind(Kind[spec.Inputs, BatchOutputs]):
    spec = spec
    outputs_type = BatchOutputs
    noun = "Batch prediction"
    api_kind = "BatchPredictionJob"
    record_kind = "batch_prediction_job"
    run_folder = "predictions"
    output_key = "output_dir"
    quota_family = None  # no documented quota id for batch prediction machines: no pre-check
    local_runner = LocalBatchRunner
    vertex_runner = VertexBatchRunner
    # What its run.json keeps of its own: its model, images and where its predictions are.
    record_outputs = (
        "output_dir",
        "predictions_dir",
        "completion_stats",
        "images",
        "model",
        "artifact_uri",
        "starting_replica_count",
        "max_replica_count",
    )

    def before_submit(self, placed: Placed[spec.Inputs], say: Callable[[str], None]) -> None:
        """Refuse a model directory the prediction server could not load, then write the instances Vertex
        reads (instances.py): every JPEG/PNG under `images`, one line each, in output_dir."""
        inputs = placed.body
        if inputs.artifact_uri and (reason := unservable(inputs.artifact_uri)):
            raise JobError(f"{self.noun} {placed.request.common.display_name}: {reason}")
        images = files_under(inputs.images, spec.IMAGE_SUFFIXES)
        if not images:
            raise JobError(
                f"{self.noun} {placed.request.common.display_name}: no JPEG or PNG files under images "
                f"{inputs.images}; point images at the folder or gs:// prefix that holds them."
            )
        target = inputs.instances_uri
        size = instances.write_instances(images, target)
        say(f"{len(images)} images written to {target} ({size / 2**20:.1f} MiB)")

    def run_deadline(self, status: JobStatus, placed: Placed[spec.Inputs]) -> float | None:
        """timeout_seconds after it started running: BatchPredictionJob has no timeout of its own."""
        if not status.start_time:
            return None
        return waiting.timestamp(status.start_time) + float(placed.request.common.timeout_seconds)

    def overrun_limit(self, placed: Placed[spec.Inputs]) -> str:
        return f"timeout_seconds={placed.request.common.timeout_seconds}"

    def capacity_advice(self, request: JobRequest[spec.Inputs]) -> str | None:
        return (
            f"check {self.quota_words()} at {quota_page(request.project)}, add fallback shapes "
            "with other machines or regions (stack config key batchPrediction.fallbacks), allow a longer "
            "wait (queueTimeoutSeconds), or ask for fewer replicas (batchPrediction.startingReplicaCount)."
        )

    def outputs(
        self, placed: Placed[spec.Inputs], status: JobStatus, say: Callable[[str], None]
    ) -> BatchOutputs:
        found = status if isinstance(status, BatchStatus) else BatchStatus(**vars(status))
        return BatchOutputs(
            predictions_dir=found.predictions_dir,
            completion_stats=self.counted(found, say),
            duration_seconds=round(restarts.running_seconds(status), 1),
            estimated_cost_usd=spend.spent(placed.rate, status).known_usd
            if placed.request.on_vertex
            else None,
        )

    def counted(self, status: BatchStatus, say: Callable[[str], None]) -> dict[str, int]:
        """The runner's CompletionStats, with the images the model answered it could not read (a result line
        whose prediction has an `error`: Vertex counts them successful) moved to failed once the job ended."""
        stats = dict(status.completion_stats)
        if not status.terminal or not status.predictions_dir or not stats.get("successful_count"):
            return stats
        try:
            unread = results.unread_in_results(status.predictions_dir)
        except (gexc.GoogleAPICallError, auth_exceptions.GoogleAuthError, OSError, ValueError) as exc:
            say(f"could not read {status.predictions_dir} to count unreadable images: {exc}")
            return stats
        stats["successful_count"] -= unread
        stats["failed_count"] += unread
        return stats

    def summary(self, outcome: Outcome[BatchOutputs], placed: Placed[spec.Inputs]) -> str:
        """E.g. `JOB_STATE_SUCCEEDED after 4m 10s running: 812 images classified, 1 failed, 0 incomplete;
        predictions in gs://.../prediction-..., as a table: .venv/bin/python -m infra.predictions gs://...`."""
        own = outcome.own
        stats, where = own.completion_stats, own.predictions_dir or "?"
        # CompletionStats.incomplete_count: "Set to -1 if the number is unknown" (completion_stats.proto).
        incomplete = int(stats.get("incomplete_count", 0))
        parts = [
            f"{outcome.state} after {duration_text(own.duration_seconds)} running: "
            f"{stats.get('successful_count', 0)} images classified, {stats.get('failed_count', 0)} failed, "
            f"{incomplete if incomplete >= 0 else 'an unknown number'} incomplete",
            f"predictions in {where}, as a table: {python_m('infra.predictions', where)}",
        ]
        cost = own.estimated_cost_usd
        if cost is not None:
            parts.append(f"estimated cost USD {cost:.2f}")
        elif placed.request.on_vertex:
            parts.append("no cost estimate (no sourced price for its machines)")
        return "; ".join(parts)

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        return cost_preview.preview_lines(props, spec.body(props).pools) if limits.chain_known(props) else []

    def shape_costs(self, props: dict[str, Any]) -> list[cost_preview.ShapeCost]:
        return cost_preview.shape_costs(props, spec.body(props).pools)


BATCH_PREDICTION_JOB = BatchPredictionKind()
