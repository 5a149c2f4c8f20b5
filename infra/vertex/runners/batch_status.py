"""A batch prediction's state as both runners report it: the shared JobStatus plus where its predictions are
and how many instances succeeded (aiplatform_v1 OutputInfo.gcs_output_directory and CompletionStats)."""

from __future__ import annotations

from dataclasses import dataclass, field

from infra.vertex.lifecycle.status import JobStatus

STATS = ("successful_count", "failed_count", "incomplete_count")


@dataclass(frozen=True)
class BatchStatus(JobStatus):
    predictions_dir: str = ""
    completion_stats: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATS, 0))
