"""A fake Vertex AI PredictionService (Predict) over real gRPC, before the fake EndpointService's endpoints.

As google/cloud/aiplatform/v1/prediction_service.proto describes Predict (googleapis f8291d2b89f0, read
2026-11-29): `endpoint` (projects/P/locations/R/endpoints/E) and `instances` are required; the response holds
one prediction per instance, in order, with the `deployed_model_id`, `model` and `model_version_id` that
served it. The endpoint's traffic split picks the deployed model (here: the one with the largest share).
What answers an instance is `serve` (bytes of one image -> its prediction), standing in for the serving
container; an endpoint with no model taking traffic is refused (FAILED_PRECONDITION: the code is not
documented).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

import grpc
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.grpc_fake import Abort, FakeService

SERVICE = "google.cloud.aiplatform.v1.PredictionService"
_ENDPOINT = re.compile(r"projects/[^/]+/locations/[^/]+/endpoints/[^/]+")


class FakePredictionService(FakeService):
    def __init__(self, endpoints: FakeEndpointService, serve: Callable[[bytes], dict[str, Any]]) -> None:
        super().__init__()
        self.endpoints, self.serve = endpoints, serve

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE,
            {
                "Predict": (
                    self._predict,
                    aiplatform_v1.PredictRequest,
                    aiplatform_v1.PredictResponse.serialize,
                )
            },
        )

    def _predict(self, request: aiplatform_v1.PredictRequest) -> aiplatform_v1.PredictResponse:
        if not _ENDPOINT.fullmatch(request.endpoint):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid Endpoint name: {request.endpoint}")
        endpoint = self.endpoints.endpoints.get(request.endpoint)
        if endpoint is None:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The Endpoint "{request.endpoint}" does not exist.')
        split = dict(endpoint.traffic_split)
        if not split:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION, f"Endpoint {request.endpoint} has no deployed model."
            )
        chosen = max(split, key=lambda k: split[k])
        deployed = next(d for d in endpoint.deployed_models if d.id == chosen)
        pb = aiplatform_v1.PredictRequest.pb(request)
        if not pb.instances:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "instances is required.")
        response = aiplatform_v1.PredictResponse.pb()(
            deployed_model_id=deployed.id,
            model=deployed.model.partition("@")[0],
            model_version_id=deployed.model_version_id,
        )
        for value in pb.instances:
            given = json_format.MessageToDict(value)
            data = base64.b64decode(given["image_bytes"]["b64"])
            json_format.ParseDict(self.serve(data), response.predictions.add())
        return aiplatform_v1.PredictResponse.wrap(response)
