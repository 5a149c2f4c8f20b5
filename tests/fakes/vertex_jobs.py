"""The fake JobService of every job kind (CustomJobs and BatchPredictionJobs, tests/fakes/vertex.py; studies,
tests/fakes/vertex_tuning.py) with Vertex AI's Locations API (google.cloud.location.Locations/ListLocations)
that the aiplatform clients mix in.

ListLocations answers `locations` (each `name` projects/P/locations/R and `location_id` R) for the project
named in `name`, a page at a time (`next_page_token`, locations.proto); `locations` holds the region ids it
answers.
"""

from __future__ import annotations

import grpc
from google.cloud.location import locations_pb2

from tests.fakes.grpc_fake import Abort, Protobuf, page_of, serialize_protobuf
from tests.fakes.vertex_tuning import FakeTuningJobService

LOCATIONS = "google.cloud.location.Locations"


class FakeVertexJobs(FakeTuningJobService):
    """CustomJobs, studies and BatchPredictionJobs behind one JobService, and the Locations API."""

    def __init__(self) -> None:
        super().__init__()
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
