"""HyperparameterTuningJobs on Vertex AI through the JobServiceClient: the CustomJob runner's client, retries,
error explanations, adoption and deletion, pointed at the tuning job's methods."""

from __future__ import annotations

from google.cloud import aiplatform_v1

from infra.vertex.runners import trials
from infra.vertex.runners.submitted import custom_job_shape
from infra.vertex.runners.trials import TuningStatus
from infra.vertex.runners.vertex import VertexRunner


class VertexTuningRunner(VertexRunner):
    """Studies on Vertex AI's regional endpoint, or on `VERTEX_AI_EMULATOR_HOST` without credentials."""

    KIND = "HyperparameterTuningJob"
    METHOD = "hyperparameter_tuning_job"
    LIST_REQUEST = aiplatform_v1.ListHyperparameterTuningJobsRequest

    def _status(self, job: aiplatform_v1.HyperparameterTuningJob) -> TuningStatus:
        metric_id = job.study_spec.metrics[0].metric_id if job.study_spec.metrics else ""
        integers = frozenset(p.parameter_id for p in job.study_spec.parameters if "integer_value_spec" in p)
        return TuningStatus(
            # The trials' shape.
            **self._fields(job, custom_job_shape(aiplatform_v1.CustomJob(job_spec=job.trial_job_spec))),
            trials=tuple(trials.from_proto(t, metric_id, integers) for t in job.trials),
        )
