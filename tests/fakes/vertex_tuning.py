"""The fake JobService (tests/fakes/vertex.py) with Vertex AI's HyperparameterTuningJob methods beside the
CustomJob ones, served on the same gRPC service so the real JobServiceClient drives both.

A study moves QUEUED -> PENDING -> RUNNING one step per Get; while RUNNING each Get finishes the active trials
(their metric from `metric_for(parameters)`: a number is a SUCCEEDED trial with that final measurement, None a
failed, INFEASIBLE one) and starts the next ones, parallel_trial_count at a time, over the spec's points in
grid order. As the API documents max_failed_trial_count ("The number of failed Trials that need to be seen
before failing the HyperparameterTuningJob"), that many failed trials fail the study; when every trial has
run it SUCCEEDED (FAILED when none succeeded). Per-shape capacity is the CustomJob fake's (`capacity`, keyed
by the trial job's shape): a QUEUED shape keeps the study queued; on a STOCKOUT shape every trial fails at
once, INFEASIBLE with Vertex's documented stockout message, so the study ends FAILED. Cancel is asynchronous
(CANCELLING, then CANCELLED, with error code 1 as the API documents); delete needs a terminal study and
returns a done long-running operation.
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Callable

import grpc
from google.cloud import aiplatform_v1
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2

from tests.fakes.grpc_fake import Abort, page_of
from tests.fakes.vertex import (
    _NEXT,
    QUEUED,
    SERVICE,
    STOCKOUT,
    TERMINAL,
    FakeJobService,
    JobState,
    _now,
    parse_filter,
    region_of,
)

Trial = aiplatform_v1.Trial
Value = float | str


def points(study: aiplatform_v1.StudySpec) -> list[dict[str, Value]]:
    """Every parameter's candidates (doubles: their two bounds), combined in grid order."""
    choices = []
    for p in study.parameters:
        if "discrete_value_spec" in p:
            choices.append(list(p.discrete_value_spec.values))
        elif "categorical_value_spec" in p:
            choices.append(list(p.categorical_value_spec.values))
        elif "integer_value_spec" in p:
            choices.append(
                [float(v) for v in range(p.integer_value_spec.min_value, p.integer_value_spec.max_value + 1)]
            )
        else:
            choices.append([p.double_value_spec.min_value, p.double_value_spec.max_value])
    ids = [p.parameter_id for p in study.parameters]
    return [dict(zip(ids, combo, strict=True)) for combo in itertools.product(*choices)]


class FakeTuningJobService(FakeJobService):
    """CustomJobs and HyperparameterTuningJobs in memory behind one gRPC JobService."""

    def __init__(self) -> None:
        super().__init__()
        self.tuning_jobs: dict[str, aiplatform_v1.HyperparameterTuningJob] = {}
        self.metric_for: Callable[[dict[str, Value]], float | None] = lambda _parameters: 0.5
        # How long each trial ran, as its end_time - start_time reports (what the study bills).
        self.trial_seconds: float = 600.0

    def handler(self) -> grpc.GenericRpcHandler:
        custom = super().handler()
        tuning = self._service(
            SERVICE,
            {
                "CreateHyperparameterTuningJob": (
                    self._create_study,
                    aiplatform_v1.CreateHyperparameterTuningJobRequest,
                    aiplatform_v1.HyperparameterTuningJob.serialize,
                ),
                "GetHyperparameterTuningJob": (
                    self._get_study,
                    aiplatform_v1.GetHyperparameterTuningJobRequest,
                    aiplatform_v1.HyperparameterTuningJob.serialize,
                ),
                "ListHyperparameterTuningJobs": (
                    self._list_studies,
                    aiplatform_v1.ListHyperparameterTuningJobsRequest,
                    aiplatform_v1.ListHyperparameterTuningJobsResponse.serialize,
                ),
                "CancelHyperparameterTuningJob": (
                    self._cancel_study,
                    aiplatform_v1.CancelHyperparameterTuningJobRequest,
                    empty_pb2.Empty.SerializeToString,
                ),
                "DeleteHyperparameterTuningJob": (
                    self._delete_study,
                    aiplatform_v1.DeleteHyperparameterTuningJobRequest,
                    operations_pb2.Operation.SerializeToString,
                ),
            },
        )
        return _Both(custom, tuning)

    # --- control -------------------------------------------------------------------------------------
    def add_study(
        self,
        parent: str,
        job: aiplatform_v1.HyperparameterTuningJob,
        state: JobState = JobState.JOB_STATE_RUNNING,
    ) -> str:
        """Seed a study as if an interrupted `pulumi up` had created it; it advances as created ones do."""
        with self._lock:
            stored = aiplatform_v1.HyperparameterTuningJob(job)
            stored.name = f"{parent}/hyperparameterTuningJobs/{next(self._ids)}"
            stored.create_time = _now()
            self.tuning_jobs[stored.name] = stored
            self._enter(stored, state)
            return stored.name

    # --- plumbing ------------------------------------------------------------------------------------
    def _lookup_study(self, name: str) -> aiplatform_v1.HyperparameterTuningJob:
        if name not in self.tuning_jobs:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The HyperparameterTuningJob "{name}" does not exist.')
        return self.tuning_jobs[name]

    def _capacity(self, job: aiplatform_v1.HyperparameterTuningJob) -> str | None:
        return self.capacity_of(region_of(job.name), aiplatform_v1.CustomJob(job_spec=job.trial_job_spec))

    def _finish_trial(self, trial: Trial, metric_id: str, stockout: str | None) -> None:
        if stockout:  # its machines could not be had: it ran nothing
            trial.end_time = trial.start_time
            trial.state = Trial.State.INFEASIBLE
            trial.infeasible_reason = stockout
            return
        parameters = {p.parameter_id: p.value for p in trial.parameters}
        value = self.metric_for(parameters)
        trial.end_time = trial.start_time + datetime.timedelta(seconds=self.trial_seconds)
        if value is None:
            trial.state = Trial.State.INFEASIBLE
            trial.infeasible_reason = "replica workerpool0-0 exited with a non-zero status of 1"
        else:
            trial.state = Trial.State.SUCCEEDED
            trial.final_measurement = aiplatform_v1.Measurement(
                step_count=1, metrics=[aiplatform_v1.Measurement.Metric(metric_id=metric_id, value=value)]
            )

    def _advance_trials(self, job: aiplatform_v1.HyperparameterTuningJob) -> None:
        metric_id = job.study_spec.metrics[0].metric_id
        region = job.name.split("/")[3]
        stockout = self.stockout_message.format(region=region) if self._capacity(job) == STOCKOUT else None
        for trial in job.trials:
            if trial.state == Trial.State.ACTIVE:
                self._finish_trial(trial, metric_id, stockout)
        failed = sum(t.state == Trial.State.INFEASIBLE for t in job.trials)
        if job.max_failed_trial_count and failed >= job.max_failed_trial_count:
            message = f"{failed} trials failed, reaching max_failed_trial_count {job.max_failed_trial_count}."
            self._enter(job, JobState.JOB_STATE_FAILED, message)
            return
        planned = points(job.study_spec)[: job.max_trial_count]
        if len(job.trials) == len(planned):
            succeeded = any(t.state == Trial.State.SUCCEEDED for t in job.trials)
            if succeeded:
                self._enter(job, JobState.JOB_STATE_SUCCEEDED)
            else:
                self._enter(job, JobState.JOB_STATE_FAILED, "All trials failed.")
            return
        for point in planned[len(job.trials) : len(job.trials) + job.parallel_trial_count]:
            number = len(job.trials) + 1
            job.trials.append(
                Trial(
                    id=str(number),
                    state=Trial.State.ACTIVE,
                    parameters=[Trial.Parameter(parameter_id=k, value=v) for k, v in point.items()],
                    start_time=_now(),
                    custom_job=f"{job.name.split('/hyperparameterTuningJobs/')[0]}/customJobs/{number}",
                )
            )

    def _step_study(self, job: aiplatform_v1.HyperparameterTuningJob) -> None:
        if job.state == JobState.JOB_STATE_CANCELLING:
            self._enter(job, JobState.JOB_STATE_CANCELLED, "CANCELED", error_code=1)
        elif job.state == JobState.JOB_STATE_QUEUED and self._capacity(job) == QUEUED:
            pass
        elif job.state in _NEXT and self.auto_advance:
            self._enter(job, _NEXT[job.state])
        elif job.state == JobState.JOB_STATE_RUNNING and self.auto_advance:
            self._advance_trials(job)

    # --- methods -------------------------------------------------------------------------------------
    def _create_study(
        self, request: aiplatform_v1.CreateHyperparameterTuningJobRequest
    ) -> aiplatform_v1.HyperparameterTuningJob:
        self._reachable(request.parent)
        job = aiplatform_v1.HyperparameterTuningJob(request.hyperparameter_tuning_job)
        if not job.trial_job_spec.worker_pool_specs:
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT, "trial_job_spec.worker_pool_specs must not be empty"
            )
        if not job.study_spec.metrics or not job.study_spec.parameters:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "study_spec needs metrics and parameters")
        if job.max_trial_count < 1 or job.parallel_trial_count < 1:
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT, "max_trial_count and parallel_trial_count are required"
            )
        return aiplatform_v1.HyperparameterTuningJob(
            self.tuning_jobs[self.add_study(request.parent, job, JobState.JOB_STATE_QUEUED)]
        )

    def _get_study(
        self, request: aiplatform_v1.GetHyperparameterTuningJobRequest
    ) -> aiplatform_v1.HyperparameterTuningJob:
        self._reachable(request.name)
        job = self._lookup_study(request.name)
        self._step_study(job)
        return aiplatform_v1.HyperparameterTuningJob(job)

    def _list_studies(
        self, request: aiplatform_v1.ListHyperparameterTuningJobsRequest
    ) -> aiplatform_v1.ListHyperparameterTuningJobsResponse:
        self._reachable(request.parent)
        matches = parse_filter(request.filter) if request.filter else (lambda _job: True)
        prefix = request.parent + "/hyperparameterTuningJobs/"
        found = [job for name, job in self.tuning_jobs.items() if name.startswith(prefix) and matches(job)]
        page, token = page_of(found, request.page_token, request.page_size, self.list_page_size)
        return aiplatform_v1.ListHyperparameterTuningJobsResponse(
            hyperparameter_tuning_jobs=[aiplatform_v1.HyperparameterTuningJob(job) for job in page],
            next_page_token=token,
        )

    def _cancel_study(self, request: aiplatform_v1.CancelHyperparameterTuningJobRequest) -> empty_pb2.Empty:
        self._reachable(request.name)
        job = self._lookup_study(request.name)
        if job.state in TERMINAL or job.state == JobState.JOB_STATE_CANCELLING:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"Cannot cancel HyperparameterTuningJob {job.name} in state {job.state.name}.",
            )
        self._enter(job, JobState.JOB_STATE_CANCELLING)
        return empty_pb2.Empty()

    def _delete_study(
        self, request: aiplatform_v1.DeleteHyperparameterTuningJobRequest
    ) -> operations_pb2.Operation:
        self._reachable(request.name)
        job = self._lookup_study(request.name)
        if job.state not in TERMINAL:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"HyperparameterTuningJob {job.name} is {job.state.name}; cancel it before deleting.",
            )
        del self.tuning_jobs[job.name]
        response = any_pb2.Any()
        response.Pack(empty_pb2.Empty())
        return operations_pb2.Operation(name=f"{job.name}/operations/1", done=True, response=response)


class _Both(grpc.GenericRpcHandler):
    """One service's methods from two handlers: the CustomJob fake's, then the tuning ones."""

    def __init__(self, *handlers: grpc.GenericRpcHandler):
        self.handlers = handlers

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        for handler in self.handlers:
            found = handler.service(handler_call_details)
            if found is not None:
                return found
        return None
