"""A fake Vertex AI EndpointService (online endpoints and their deployed models) over real gRPC on localhost.

Requests and responses are the library's own proto-plus types, so the real `EndpointServiceClient` drives it
through `VERTEX_AI_EMULATOR_HOST`. As google/cloud/aiplatform/v1/endpoint_service.proto, endpoint.proto and
machine_resources.proto say (googleapis f8291d2b89f0, read 2026-11-29):
- DeployModel and UndeployModel are long-running operations; what they change happens when the operation ends
  (here after `operation_polls` GetOperation calls or GetEndpoint or ListEndpoints reads of its endpoint,
  which stand for the time passing, or `operations.finish_all()`).
- `DeployedModel.id` is 1-10 digits (generated when unset); `"0"` in a DeployModel's `traffic_split` names the
  model being deployed; a non-empty `traffic_split` overwrites the endpoint's and must add up to 100; an empty
  one leaves it as it is (Endpoint.traffic_split: "must add up to 100, or map must be empty").
- A DeployedModel is undeployed "only if it doesn't have any traffic assigned to it when this method
  executes, or if this field unassigns any traffic to it"; undeploying the last one leaves the split empty.
- `DedicatedResources.min_replica_count` "must be greater than or equal to 1"; `max_replica_count` defaults
  to it.
- ListEndpoints filters `labels.key="value"` (and `!=`); DeleteEndpoint is not served (the native resource
  owns the endpoint). A second DeployModel with an id that exists or is being deployed is ALREADY_EXISTS, as
  AIP-133 (https://google.aip.dev/133) says of a create with a taken id: the proto does not name the code.
- MutateDeployedModel changes "only" min_replica_count, max_replica_count (and required_replica_count,
  autoscaling_metric_specs and container logging, not served here) of a deployed model, named by an
  update_mask relative to the DeployedModel (AIP-161); a long-running operation.
With `models` (a FakeModelService served beside this one) a deployed version must exist, and it is kept in
`models.deployed` while it serves, so the Model Registry refuses to delete it.
"""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Mapping

import grpc
from google.cloud import aiplatform_v1
from google.longrunning import operations_pb2

from tests.fakes import filters
from tests.fakes.grpc_fake import Abort, FakeService, page_of
from tests.fakes.model_service import FakeModelService
from tests.fakes.operations import Operations

SERVICE = "google.cloud.aiplatform.v1.EndpointService"
_ENDPOINT = re.compile(r"projects/[^/]+/locations/[^/]+/endpoints/[^/]+")
_DEPLOYED_ID = re.compile(r"[0-9]{1,10}")
# The mutable fields this fake serves, as masks relative to the DeployedModel (the proto lists them).
MUTABLE_PATHS = frozenset({"dedicated_resources.min_replica_count", "dedicated_resources.max_replica_count"})


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _split_failure(split: Mapping[str, int], known: set[str]) -> str | None:
    """Why a non-empty traffic split is refused, else None."""
    unknown = sorted(set(split) - known)
    if unknown:
        return f"traffic_split names DeployedModel ids not on the endpoint: {', '.join(unknown)}"
    if any(v < 0 for v in split.values()) or sum(split.values()) != 100:
        return f"The traffic percentage values must add up to 100, got {dict(split)}"
    return None


class FakeEndpointService(FakeService):
    """In-memory endpoints (name -> Endpoint); `add_endpoint` puts one there as the native resource would."""

    def __init__(self, models: FakeModelService | None = None) -> None:
        super().__init__()
        self.endpoints: dict[str, aiplatform_v1.Endpoint] = {}
        self.models = models
        self.operations = models.operations if models is not None else Operations()
        self.operation_polls = 1
        # Deploys accepted whose operation has not ended: endpoint -> ids.
        self.deploying: dict[str, set[str]] = {}
        self._ids = itertools.count(1000000001)

    def handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        own = (self.handler(), self.operations.handler())
        return own if self.models is None else (*own, self.models.handler())

    def handler(self) -> grpc.GenericRpcHandler:
        op = operations_pb2.Operation.SerializeToString
        return self._service(
            SERVICE,
            {
                "GetEndpoint": (
                    self._get,
                    aiplatform_v1.GetEndpointRequest,
                    aiplatform_v1.Endpoint.serialize,
                ),
                "ListEndpoints": (
                    self._list,
                    aiplatform_v1.ListEndpointsRequest,
                    aiplatform_v1.ListEndpointsResponse.serialize,
                ),
                "DeployModel": (self._deploy, aiplatform_v1.DeployModelRequest, op),
                "UndeployModel": (self._undeploy, aiplatform_v1.UndeployModelRequest, op),
                "MutateDeployedModel": (self._mutate, aiplatform_v1.MutateDeployedModelRequest, op),
            },
        )

    # --- control -------------------------------------------------------------------------------------
    def add_endpoint(self, name: str, labels: Mapping[str, str] | None = None) -> aiplatform_v1.Endpoint:
        if not _ENDPOINT.fullmatch(name):
            raise ValueError(f"not an endpoint name: {name}")
        endpoint = aiplatform_v1.Endpoint(
            name=name, display_name=name.rsplit("/", 1)[1], labels=dict(labels or {}), create_time=_now()
        )
        self.endpoints[name] = endpoint
        return endpoint

    def deploy_now(
        self, endpoint: str, model: str, min_replicas: int = 1, max_replicas: int = 0, traffic: bool = True
    ) -> str:
        """`model` deployed as DeployModel deploys it (with all traffic unless `traffic` is false), done at
        once; its DeployedModel id."""
        deployed = aiplatform_v1.DeployedModel(
            model=model,
            dedicated_resources=aiplatform_v1.DedicatedResources(
                machine_spec=aiplatform_v1.MachineSpec(machine_type="n1-standard-2"),
                min_replica_count=min_replicas,
                max_replica_count=max_replicas,
            ),
        )
        request = aiplatform_v1.DeployModelRequest(
            endpoint=endpoint, deployed_model=deployed, traffic_split={"0": 100} if traffic else {}
        )
        saved, self.operation_polls = self.operation_polls, 0
        try:
            operation = self._deploy(request)
        finally:
            self.operation_polls = saved
        return aiplatform_v1.DeployModelResponse.deserialize(operation.response.value).deployed_model.id

    def deployed(self, endpoint: str) -> dict[str, aiplatform_v1.DeployedModel]:
        """id -> deployed model, for assertions."""
        return {d.id: d for d in self.endpoints[endpoint].deployed_models}

    def traffic(self, endpoint: str) -> dict[str, int]:
        return dict(self.endpoints[endpoint].traffic_split)

    # --- methods -------------------------------------------------------------------------------------
    def _endpoint(self, name: str) -> aiplatform_v1.Endpoint:
        if not _ENDPOINT.fullmatch(name):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid Endpoint name: {name}")
        if name not in self.endpoints:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The Endpoint "{name}" does not exist.')
        return self.endpoints[name]

    def _get(self, request: aiplatform_v1.GetEndpointRequest) -> aiplatform_v1.Endpoint:
        endpoint = self._endpoint(request.name)
        self.operations.tick(endpoint.name)  # its deploys and undeploys go on between reads
        return aiplatform_v1.Endpoint(endpoint)

    def _list(self, request: aiplatform_v1.ListEndpointsRequest) -> aiplatform_v1.ListEndpointsResponse:
        matches = filters.labels_filter(request.filter) if request.filter else (lambda _e: True)
        listed = [
            e
            for name, e in sorted(self.endpoints.items())
            if name.startswith(request.parent + "/endpoints/") and matches(e)
        ]
        for endpoint in listed:
            self.operations.tick(endpoint.name)  # as a GetEndpoint: time passes between reads
        found = [aiplatform_v1.Endpoint(e) for e in listed]
        page, token = page_of(found, request.page_token, request.page_size, 100)
        return aiplatform_v1.ListEndpointsResponse(endpoints=page, next_page_token=token)

    def _version_id(self, model: str) -> str:
        if self.models is None:
            return model.rpartition("@")[2] if "@" in model else "1"
        _parent, vid, _version = self.models._lookup(model)  # NOT_FOUND when it does not exist
        return vid

    def _deploy(self, request: aiplatform_v1.DeployModelRequest) -> operations_pb2.Operation:
        endpoint = self._endpoint(request.endpoint)
        wanted = aiplatform_v1.DeployedModel(request.deployed_model)
        if not wanted.model:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "deployed_model.model is required.")
        version_id = self._version_id(wanted.model)
        resources = wanted.dedicated_resources
        if "dedicated_resources" not in wanted:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "A custom model needs dedicated_resources.")
        if resources.min_replica_count < 1:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "min_replica_count must be >= 1.")
        if resources.max_replica_count and resources.max_replica_count < resources.min_replica_count:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "max_replica_count must be >= min_replica_count.")
        deploying = self.deploying.setdefault(endpoint.name, set())
        taken = {d.id for d in endpoint.deployed_models} | deploying
        if wanted.id and not _DEPLOYED_ID.fullmatch(wanted.id):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"DeployedModel id {wanted.id!r}: 1-10 digits.")
        if wanted.id in taken:
            raise Abort(
                grpc.StatusCode.ALREADY_EXISTS,
                f"DeployedModel {wanted.id} already exists in Endpoint {endpoint.name}.",
            )
        deployed_id = wanted.id or str(next(self._ids))
        split = dict(request.traffic_split)
        failure = split and _split_failure(split, {d.id for d in endpoint.deployed_models} | {"0"})
        if failure:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, failure)
        deploying.add(deployed_id)

        def finish() -> None:
            deploying.discard(deployed_id)
            wanted.id, wanted.model_version_id, wanted.create_time = deployed_id, version_id, _now()
            if not resources.max_replica_count:
                wanted.dedicated_resources.max_replica_count = resources.min_replica_count
            wanted.status = aiplatform_v1.DeployedModel.Status(
                available_replica_count=resources.min_replica_count, last_update_time=_now()
            )
            wanted.display_name = wanted.display_name or wanted.model.rpartition("/")[2]
            endpoint.deployed_models.append(wanted)
            if split:
                endpoint.traffic_split = {deployed_id if k == "0" else k: v for k, v in split.items()}
            self._serving(wanted.model, version_id, True)

        metadata = aiplatform_v1.DeployModelOperationMetadata(
            generic_metadata=aiplatform_v1.GenericOperationMetadata(create_time=_now())
        )
        response = aiplatform_v1.DeployModelResponse(
            deployed_model=aiplatform_v1.DeployedModel(id=deployed_id)
        )
        return self.operations.start_operation(
            endpoint.name, metadata, response, self.operation_polls, finish
        )

    def _undeploy(self, request: aiplatform_v1.UndeployModelRequest) -> operations_pb2.Operation:
        endpoint = self._endpoint(request.endpoint)
        ids = [d.id for d in endpoint.deployed_models]
        if request.deployed_model_id not in ids:
            raise Abort(
                grpc.StatusCode.NOT_FOUND,
                f"DeployedModel {request.deployed_model_id} does not exist in Endpoint {endpoint.name}.",
            )
        split = dict(request.traffic_split)
        failure = split and _split_failure(split, set(ids))
        if failure:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, failure)
        after = split or dict(endpoint.traffic_split)
        last = len(ids) == 1
        if after.get(request.deployed_model_id, 0) > 0 and not last:
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"DeployedModel {request.deployed_model_id} still has {after[request.deployed_model_id]}% of "
                "the traffic; set a traffic_split that moves it to other DeployedModels.",
            )

        def finish() -> None:
            gone = next(d for d in endpoint.deployed_models if d.id == request.deployed_model_id)
            kept = [d for d in endpoint.deployed_models if d.id != request.deployed_model_id]
            del endpoint.deployed_models[:]
            endpoint.deployed_models.extend(kept)
            endpoint.traffic_split = {} if last else {k: v for k, v in after.items() if v > 0}
            self._serving(gone.model, gone.model_version_id, False)

        metadata = aiplatform_v1.UndeployModelOperationMetadata(
            generic_metadata=aiplatform_v1.GenericOperationMetadata(create_time=_now())
        )
        return self.operations.start_operation(
            endpoint.name, metadata, aiplatform_v1.UndeployModelResponse(), self.operation_polls, finish
        )

    def _mutate(self, request: aiplatform_v1.MutateDeployedModelRequest) -> operations_pb2.Operation:
        endpoint = self._endpoint(request.endpoint)
        wanted = request.deployed_model
        found = [d for d in endpoint.deployed_models if d.id == wanted.id]
        if not found:
            raise Abort(
                grpc.StatusCode.NOT_FOUND,
                f"DeployedModel {wanted.id} does not exist in Endpoint {endpoint.name}.",
            )
        paths = list(request.update_mask.paths)
        if not paths or any(path not in MUTABLE_PATHS for path in paths):
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"update_mask {paths}: a field that cannot be mutated (mutable: {sorted(MUTABLE_PATHS)}).",
            )
        resources = aiplatform_v1.DedicatedResources(found[0].dedicated_resources)
        for path in paths:
            field = path.rsplit(".", 1)[1]
            setattr(resources, field, getattr(wanted.dedicated_resources, field))
        if resources.min_replica_count < 1 or resources.max_replica_count < resources.min_replica_count:
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "min_replica_count must be >= 1 and max_replica_count >= min_replica_count.",
            )

        def finish() -> None:
            found[0].dedicated_resources = resources

        metadata = aiplatform_v1.MutateDeployedModelOperationMetadata(
            generic_metadata=aiplatform_v1.GenericOperationMetadata(create_time=_now())
        )
        mutated = aiplatform_v1.DeployedModel(found[0])
        mutated.dedicated_resources = resources
        response = aiplatform_v1.MutateDeployedModelResponse(deployed_model=mutated)
        return self.operations.start_operation(
            endpoint.name, metadata, response, self.operation_polls, finish
        )

    def _serving(self, model: str, version_id: str, serving: bool) -> None:
        """Tell the Model Registry fake which versions serve (it refuses to delete those)."""
        if self.models is None:
            return
        name = f"{model.partition('@')[0]}@{version_id}"
        still = any(
            f"{d.model.partition('@')[0]}@{d.model_version_id}" == name
            for e in self.endpoints.values()
            for d in e.deployed_models
        )
        if serving or still:
            self.models.deployed.add(name)
        else:
            self.models.deployed.discard(name)
