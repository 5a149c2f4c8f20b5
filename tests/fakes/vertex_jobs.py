"""The fake JobService (CustomJobs and studies, tests/fakes/vertex_tuning.py) with every job kind the project
runs listed and cancelled: BatchPredictionJobs' List/Get/Cancel beside the others, on the same gRPC service,
and
Vertex AI's Locations API (google.cloud.location.Locations/ListLocations) that the aiplatform clients mix in.

As aiplatform_v1 documents them (job_service.proto, read 2026-11-26): ListBatchPredictionJobs takes a parent
`projects/P/locations/R` and a filter over `state`, `display_name` and `labels`; CancelBatchPredictionJob
"starts asynchronous cancellation ... its state is set to CANCELLED" (here CANCELLING, then CANCELLED on the
next Get) and refuses a terminal job; seeded jobs stay in their state until `set_batch_state` or a cancel.
Every list answers a page at a time with the standard `next_page_token` (AIP-158). ListLocations answers
`locations` (each `name` projects/P/locations/R and `location_id` R) for the project
named in `name`, a page at a time (`next_page_token`, locations.proto); `locations` holds the region ids it
answers.
"""

from __future__ import annotations

import grpc
from google.cloud import aiplatform_v1
from google.cloud.location import locations_pb2
from google.protobuf import empty_pb2

from tests.fakes.grpc_fake import Abort, Protobuf, page_of, serialize_protobuf
from tests.fakes.vertex import SERVICE, TERMINAL, JobState, _now, parse_filter
from tests.fakes.vertex_tuning import FakeTuningJobService, _Both

LOCATIONS = "google.cloud.location.Locations"


class FakeVertexJobs(FakeTuningJobService):
    """CustomJobs, studies and BatchPredictionJobs behind one JobService, and the Locations API."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_jobs: dict[str, aiplatform_v1.BatchPredictionJob] = {}
        # The regions ListLocations answers (a real project sees every Vertex AI region).
        self.locations: list[str] = ["us-central1", "us-east4", "europe-west4"]
        # How many locations one ListLocations page holds when the request sets no page_size.
        self.locations_page_size = 100

    def handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        locations = self._service(
            LOCATIONS,
            {
                "ListLocations": (
                    self._list_locations,
                    Protobuf(locations_pb2.ListLocationsRequest),
                    serialize_protobuf,
                )
            },
        )
        return (self.handler(), locations)

    def handler(self) -> grpc.GenericRpcHandler:
        batch = self._service(
            SERVICE,
            {
                "GetBatchPredictionJob": (
                    self._get_batch,
                    aiplatform_v1.GetBatchPredictionJobRequest,
                    aiplatform_v1.BatchPredictionJob.serialize,
                ),
                "ListBatchPredictionJobs": (
                    self._list_batch,
                    aiplatform_v1.ListBatchPredictionJobsRequest,
                    aiplatform_v1.ListBatchPredictionJobsResponse.serialize,
                ),
                "CancelBatchPredictionJob": (
                    self._cancel_batch,
                    aiplatform_v1.CancelBatchPredictionJobRequest,
                    empty_pb2.Empty.SerializeToString,
                ),
            },
        )
        return _Both(super().handler(), batch)

    # --- control -------------------------------------------------------------------------------------
    def add_batch_job(
        self,
        parent: str,
        job: aiplatform_v1.BatchPredictionJob,
        state: JobState = JobState.JOB_STATE_RUNNING,
    ) -> str:
        """Seed a batch prediction job; it stays in `state` until set_batch_state or a cancel."""
        with self._lock:
            stored = aiplatform_v1.BatchPredictionJob(job)
            stored.name = f"{parent}/batchPredictionJobs/{next(self._ids)}"
            stored.create_time = _now()
            self.batch_jobs[stored.name] = stored
            self._enter(stored, state)
            return stored.name

    def set_batch_state(self, name: str, state: JobState) -> None:
        with self._lock:
            self._enter(self.batch_jobs[name], state)

    # --- methods -------------------------------------------------------------------------------------
    def _lookup_batch(self, name: str) -> aiplatform_v1.BatchPredictionJob:
        if name not in self.batch_jobs:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The BatchPredictionJob "{name}" does not exist.')
        return self.batch_jobs[name]

    def _get_batch(
        self, request: aiplatform_v1.GetBatchPredictionJobRequest
    ) -> aiplatform_v1.BatchPredictionJob:
        self._reachable(request.name)
        job = self._lookup_batch(request.name)
        if job.state == JobState.JOB_STATE_CANCELLING:
            self._enter(job, JobState.JOB_STATE_CANCELLED, "CANCELED", error_code=1)
        return aiplatform_v1.BatchPredictionJob(job)

    def _list_batch(
        self, request: aiplatform_v1.ListBatchPredictionJobsRequest
    ) -> aiplatform_v1.ListBatchPredictionJobsResponse:
        self._reachable(request.parent)
        matches = parse_filter(request.filter) if request.filter else (lambda _job: True)
        prefix = request.parent + "/batchPredictionJobs/"
        found = [job for name, job in self.batch_jobs.items() if name.startswith(prefix) and matches(job)]
        page, token = page_of(found, request.page_token, request.page_size, self.list_page_size)
        return aiplatform_v1.ListBatchPredictionJobsResponse(
            batch_prediction_jobs=[aiplatform_v1.BatchPredictionJob(job) for job in page],
            next_page_token=token,
        )

    def _cancel_batch(self, request: aiplatform_v1.CancelBatchPredictionJobRequest) -> empty_pb2.Empty:
        self._reachable(request.name)
        job = self._lookup_batch(request.name)
        if job.state in TERMINAL or job.state == JobState.JOB_STATE_CANCELLING:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"Cannot cancel BatchPredictionJob {job.name} in state {job.state.name}.",
            )
        self._enter(job, JobState.JOB_STATE_CANCELLING)
        return empty_pb2.Empty()

    def _list_locations(
        self, request: locations_pb2.ListLocationsRequest
    ) -> locations_pb2.ListLocationsResponse:
        if not request.name.startswith("projects/"):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid name: {request.name}")
        page, token = page_of(self.locations, request.page_token, request.page_size, self.locations_page_size)
        return locations_pb2.ListLocationsResponse(
            locations=[
                locations_pb2.Location(name=f"{request.name}/locations/{region}", location_id=region)
                for region in page
            ],
            next_page_token=token,
        )
