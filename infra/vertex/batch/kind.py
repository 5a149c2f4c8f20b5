"""The BatchPredictionJob as a kind of the shared lifecycle: a model classifying a bucket of images.

Only what differs from the other kinds is here: the request (spec.py), the file list Vertex reads the images
from (written before each submission), its running-time cap (enforced by the provider: the request has
none), its outputs and closing line. Placement across fallback shapes and regions, adoption, the dollar
cap, cancel and delete, run.json: the lifecycle's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infra.vertex.batch import spec
from infra.vertex.batch.status import BatchStatus
from infra.vertex.capacity.quotas import quota_page
from infra.vertex.cost import cap as cost_cap
from infra.vertex.cost import preview as cost_preview
from infra.vertex.cost import spend
from infra.vertex.lifecycle import waiting
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.heartbeat import duration_text
from infra.vertex.lifecycle.kind import JobKind
from infra.vertex.lifecycle.output_files import files_under, write_text
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local.batch_runner import LocalBatchRunner
from infra.vertex.runners.vertex_batch import VertexBatchRunner


class BatchPredictionKind(JobKind):
    spec = spec
    noun = "Batch prediction"
    api_kind = "BatchPredictionJob"
    record_kind = "batch_prediction_job"
    run_folder = "predictions"
    output_key = "output_dir"
    quota_family = None  # no documented quota id for batch prediction machines: no pre-check
    local_runner = LocalBatchRunner
    vertex_runner = VertexBatchRunner

    def before_submit(self, shaped: dict[str, Any], say: Callable[[str], None]) -> None:
        """The file list Vertex reads the images from (instances_format file-list): every JPEG/PNG under
        `images`, one per line, in output_dir."""
        images = files_under(shaped["images"], spec.IMAGE_SUFFIXES)
        if not images:
            raise JobError(
                f"{self.noun} {shaped['display_name']}: no JPEG or PNG files under images "
                f"{shaped['images']}; point images at the folder or gs:// prefix that holds them."
            )
        target = spec.file_list_uri(shaped)
        write_text(target, "".join(f"{image}\n" for image in images), content_type="text/plain")
        say(f"{len(images)} images listed in {target}")

    def run_deadline(self, status: JobStatus, props: dict[str, Any]) -> float | None:
        """timeout_seconds after it started running: BatchPredictionJob has no timeout of its own."""
        if not status.start_time:
            return None
        return waiting.timestamp(status.start_time) + float(props["timeout_seconds"])

    def overrun_limit(self, props: dict[str, Any]) -> str:
        return f"timeout_seconds={props['timeout_seconds']}"

    def capacity_advice(self, props: dict[str, Any]) -> str | None:
        return (
            f"check {self.quota_words()} at {quota_page(props.get('project'))}, add fallback shapes "
            "with other machines or regions (stack config key batchPrediction.fallbacks), allow a longer "
            "wait (queueTimeoutSeconds), or ask for fewer replicas (batchPrediction.startingReplicaCount)."
        )

    def outputs(
        self, props: dict[str, Any], shaped: dict[str, Any], status: JobStatus, say: Callable[[str], None]
    ) -> dict[str, Any]:
        found = status if isinstance(status, BatchStatus) else BatchStatus(**vars(status))
        out: dict[str, Any] = {
            "predictions_dir": found.predictions_dir,
            "completion_stats": dict(found.completion_stats),
            "duration_seconds": round(self.running_seconds(status), 1),
        }
        if shaped.get("runner") == "vertex":
            spent = spend.spent(shaped, status)
            if spent.known_usd is not None:
                out["estimated_cost_usd"] = spent.known_usd
        return {**out, **cost_cap.outputs(shaped, status)}

    def summary(self, outputs: dict[str, Any]) -> str:
        """E.g. `JOB_STATE_SUCCEEDED after 4m 10s running: 812 images classified, 0 failed; predictions in
        gs://.../prediction-...; no cost estimate (no sourced price for batch prediction machines)`."""
        stats = outputs.get("completion_stats") or {}
        parts = [
            f"{outputs['state']} after {duration_text(outputs.get('duration_seconds') or 0)} running: "
            f"{stats.get('successful_count', 0)} images classified, {stats.get('failed_count', 0)} failed",
            f"predictions in {outputs.get('predictions_dir') or '?'}",
        ]
        if "estimated_cost_usd" in outputs:
            parts.append(f"estimated cost USD {outputs['estimated_cost_usd']:.2f}")
        elif outputs.get("runner") == "vertex":
            parts.append("no cost estimate (no sourced price for batch prediction machines)")
        return "; ".join(parts)

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        return cost_preview.preview_lines(props)


BATCH_PREDICTION_JOB = BatchPredictionKind()
