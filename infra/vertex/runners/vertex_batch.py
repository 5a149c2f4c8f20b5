"""BatchPredictionJobs on Vertex AI through the JobServiceClient: the CustomJob runner's client, retries,
error explanations, adoption and deletion, pointed at the batch prediction methods."""

from __future__ import annotations

from google.cloud import aiplatform_v1

from infra.vertex.runners.batch_status import STATS, BatchStatus
from infra.vertex.runners.submitted import machine_shape
from infra.vertex.runners.vertex import VertexRunner


class VertexBatchRunner(VertexRunner):
    """Batch predictions on Vertex AI's regional endpoint, or on `VERTEX_AI_EMULATOR_HOST`."""

    KIND = "BatchPredictionJob"
    METHOD = "batch_prediction_job"
    LIST_REQUEST = aiplatform_v1.ListBatchPredictionJobsRequest
    JOB_TYPE = "batch-predictions"  # python-aiplatform jobs.py: BatchPredictionJob._job_type

    def _status(self, job: aiplatform_v1.BatchPredictionJob) -> BatchStatus:
        stats = job.completion_stats
        return BatchStatus(
            # BatchDedicatedResources has no strategy: STANDARD.
            **self._fields(job, machine_shape(job.dedicated_resources.machine_spec, "STANDARD")),
            predictions_dir=job.output_info.gcs_output_directory,
            completion_stats={key: int(getattr(stats, key)) for key in STATS},
        )
