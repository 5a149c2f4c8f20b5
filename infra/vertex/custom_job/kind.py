"""The CustomJob as a kind of the shared lifecycle: a training job that resumes from its checkpoints."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infra.vertex.cost import preview as cost_preview
from infra.vertex.custom_job import experiments, spec
from infra.vertex.custom_job.report import TrainingOutputs, run_outputs, summary_line
from infra.vertex.custom_job.watch import watcher
from infra.vertex.lifecycle import cap as cost_cap
from infra.vertex.lifecycle import restarts, spend, waiting
from infra.vertex.lifecycle.kind import Kind, Ticker
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.lifecycle.request import Placed
from infra.vertex.lifecycle.run_record import arg_values
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local.runner import LocalRunner
from infra.vertex.runners.vertex import VertexRunner


class CustomJobKind(Kind[spec.Training, TrainingOutputs]):
    spec = spec
    outputs_type = TrainingOutputs
    noun = "Training job"
    api_kind = "CustomJob"
    record_kind = "custom_job"
    run_folder = "runs"
    output_key = "base_output_dir"
    resumable = True
    # Vertex's job_spec.experiment / experiment_run are set at submission (the job is not changed after):
    # a new or renamed experiment links the next job; upgraded stacks keep their unlinked jobs as they are.
    fixed_at_submit = ("experiment", "experiment_run")
    local_runner = LocalRunner
    vertex_runner = VertexRunner

    def build(self, placed: Placed[spec.Training], attempt: restarts.Attempt, carried: spend.Carried) -> Any:
        """Labelled with the attempt and the cost carried from earlier attempts, and allowed the running time
        left (restarts.py, spend.py)."""
        job = spec.build_job(placed.body, placed.request.key)
        if attempt != restarts.Attempt(1, 0):
            remaining = restarts.remaining_seconds(placed.request.common.timeout_seconds, attempt)
            job = restarts.resubmission(job, attempt, remaining)
            job.labels[spend.SPENT_LABEL] = carried.label
        return job

    def ticker(self, placed: Placed[spec.Training], status: JobStatus, say: Callable[[str], None]) -> Ticker:
        return watcher(placed, status, say)

    def run_deadline(self, status: JobStatus, placed: Placed[spec.Training]) -> float | None:
        if not status.start_time:
            return None
        allowed = restarts.remaining_seconds(
            placed.request.common.timeout_seconds, restarts.Attempt.of(status)
        )
        return waiting.timestamp(status.start_time) + allowed + waiting.DEADLINE_GRACE_SECONDS

    def overrun_limit(self, placed: Placed[spec.Training]) -> str:
        limit = placed.request.common.timeout_seconds
        return f"timeout_seconds={limit} plus {waiting.DEADLINE_GRACE_SECONDS:.0f}s grace"

    def outputs(
        self, placed: Placed[spec.Training], status: JobStatus, say: Callable[[str], None]
    ) -> TrainingOutputs:
        return run_outputs(placed, status, say)

    def summary(self, outcome: Outcome[TrainingOutputs], placed: Placed[spec.Training]) -> str:
        return summary_line(outcome, placed)

    def before_submit(self, placed: Placed[spec.Training], say: Callable[[str], None]) -> None:
        """The run the job is linked to exists before the job (the SDK's order)."""
        link = placed.body.link
        if link is not None:
            experiments.ensure(link, say)

    def ended(
        self, placed: Placed[spec.Training], outcome: Outcome[TrainingOutputs], say: Callable[[str], None]
    ) -> None:
        """The experiment run's end state, the chief's arguments as its parameters, the job's metrics."""
        link = placed.body.link
        if link is None or not link.run:
            return
        params = experiments.run_params(arg_values(list(placed.body.chief_args)))
        experiments.end_run(link, outcome.state, outcome.own.metrics or {}, params, say)

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        return cost_preview.preview_lines(props)

    def worst_case_usd(self, props: dict[str, Any]) -> float | None:
        return cost_preview.worst_case_usd(props)

    def replaces(self, olds: dict[str, Any], changed: list[str]) -> list[str]:
        return cost_cap.replaces(olds, changed)

    def replace_lines(self, olds: dict[str, Any]) -> list[str]:
        expected = cost_preview.expected_line(olds)
        return [expected] if expected else []


CUSTOM_JOB = CustomJobKind()
