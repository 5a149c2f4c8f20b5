"""A deployed model on an endpoint, through Vertex AI's EndpointServiceClient (regional, or the emulator):
read, deploy with all traffic, scale in place, undeploy with a traffic split that removes it, waiting on each
operation."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.endpoint_service.transports import EndpointServiceGrpcTransport
from google.protobuf import field_mask_pb2

from infra.dynamic import retries
from infra.dynamic.endpoints import client_kwargs, vertex_endpoint
from infra.dynamic.errors import ProviderError
from infra.dynamic.polling import poll_until
from infra.guard.deployed_models import traffic_without

T = TypeVar("T")
CALL_TIMEOUT_SECONDS = 60.0
FIRST_RETRY_DELAY_SECONDS = 1.0
# A line on stderr this often while an operation runs and nothing else is said.
HEARTBEAT_SECONDS = 60.0
# MutateDeployedModel's update mask for the replica counts, relative to the DeployedModel (AIP-161 field
# masks). MutateDeployedModelRequest.deployed_model: "Only the following fields can be mutated:
# min_replica_count ..., max_replica_count ..." (though IMMUTABLE for other methods); a long-running
# operation (endpoint_service.proto, machine_resources.proto; googleapis f8291d2b89, read 2026-11-29).
REPLICA_MASK = ("dedicated_resources.min_replica_count", "dedicated_resources.max_replica_count")


class DeploymentError(ProviderError):
    """A deploy or undeploy failed, did not finish in time, or the API refused a request."""


@dataclass(frozen=True)
class Deployed:
    """One DeployedModel as the endpoint reports it, with the endpoint's traffic to it."""

    endpoint: str
    deployed_model_id: str
    model: str  # as deployed: projects/P/locations/R/models/M@V
    model_version_id: str
    traffic_percent: int
    available_replicas: int
    create_time: str


def deployed_models(endpoint: aiplatform_v1.Endpoint) -> list[Deployed]:
    """Every model deployed on `endpoint`, oldest first."""
    split = dict(endpoint.traffic_split)
    out = [
        Deployed(
            endpoint=endpoint.name,
            deployed_model_id=d.id,
            model=d.model,
            model_version_id=d.model_version_id,
            traffic_percent=split.get(d.id, 0),
            available_replicas=d.status.available_replica_count,
            create_time=d.create_time.isoformat() if d.create_time else "",
        )
        for d in endpoint.deployed_models
    ]
    return sorted(out, key=lambda d: d.create_time)


class Endpoints:
    """The deployed models of endpoints in one project and region; `say` gets progress lines, operations
    are polled every `interval` seconds at first and end with an error past `deadline` (a wall-clock time)."""

    def __init__(
        self, project: str, region: str, say: Callable[[str], None], deadline: float, interval: float
    ):
        self.project, self.region, self.say = project, region, say
        self.deadline, self.interval = deadline, interval
        self._client: aiplatform_v1.EndpointServiceClient | None = None

    @property
    def client(self) -> aiplatform_v1.EndpointServiceClient:
        if self._client is None:
            self._client = aiplatform_v1.EndpointServiceClient(
                **client_kwargs(EndpointServiceGrpcTransport, vertex_endpoint(self.region))
            )
        return self._client

    def _call(self, what: str, call: Callable[[], T]) -> T:
        try:
            return retries.with_retry(
                call, what, FIRST_RETRY_DELAY_SECONDS, error=DeploymentError, service="Vertex AI"
            )
        except gexc.GoogleAPICallError as exc:
            raise DeploymentError(explain(exc, what, self.project, self.region), exc) from None

    def get(self, endpoint: str) -> aiplatform_v1.Endpoint | None:
        """The endpoint, or None when it does not exist."""
        return self._call_or_none(
            f"Reading {endpoint}",
            lambda: self.client.get_endpoint(name=endpoint, timeout=CALL_TIMEOUT_SECONDS),
        )

    def find(self, endpoint: str, deployed_id: str) -> Deployed | None:
        """Our DeployedModel on the endpoint, or None (it, or the endpoint, is gone)."""
        found = self.get(endpoint)
        matches = [d for d in deployed_models(found) if d.deployed_model_id == deployed_id] if found else []
        return matches[0] if matches else None

    def deploy(self, endpoint: str, model: aiplatform_v1.DeployedModel) -> Deployed:
        """Deploys `model` with all the endpoint's traffic (DeployModel, "0": 100) and waits for it; adopts
        the same id when an interrupted `up` deployed it, or waits for that deploy while it still runs."""
        existing = self.find(endpoint, model.id)
        if existing is not None:
            self.say(f"adopting DeployedModel {model.id}, deployed earlier with the same inputs")
            return existing
        what = f"Deploying {model.model} to {endpoint}"
        try:
            operation = self._call(
                what,
                lambda: self.client.deploy_model(
                    endpoint=endpoint,
                    deployed_model=model,
                    traffic_split={"0": 100},
                    timeout=CALL_TIMEOUT_SECONDS,
                ),
            )
        except DeploymentError as exc:
            if not isinstance(exc.api_error, gexc.AlreadyExists):
                raise
            # An interrupted `up` started this very deploy (same id): wait for it rather than deploy twice.
            self.say(f"DeployedModel {model.id} is being deployed already (an interrupted `up`): waiting")
            appeared = poll_until(
                self.find(endpoint, model.id),
                lambda _before: self.find(endpoint, model.id),
                lambda now: now is not None,
                self.deadline,
                self.interval,
            )
            if appeared is None:
                raise DeploymentError(
                    f"DeployedModel {model.id} was still being deployed to {endpoint} at the deadline; "
                    "run `pulumi up` again."
                ) from None
            return appeared
        self.say(f"deploying {model.model} as DeployedModel {model.id} ({operation.operation.name})")
        self._await(what, operation)
        found = self.find(endpoint, model.id)
        if found is None:
            raise DeploymentError(f"{what}: the operation ended but DeployedModel {model.id} is not there.")
        return found

    def undeploy(self, endpoint: str, deployed_id: str) -> bool:
        """Undeploys it, moving its traffic away in the same call; False when it was gone already."""
        current = self.get(endpoint)
        ids = [d.deployed_model_id for d in deployed_models(current)] if current else []
        if deployed_id not in ids or current is None:
            return False
        split = traffic_without(dict(current.traffic_split), ids, deployed_id)
        what = f"Undeploying DeployedModel {deployed_id} from {endpoint}"
        operation = self._call_or_none(
            what,
            lambda: self.client.undeploy_model(
                endpoint=endpoint,
                deployed_model_id=deployed_id,
                traffic_split=split,
                timeout=CALL_TIMEOUT_SECONDS,
            ),
        )
        if operation is None:
            return False
        self._await(what, operation)
        return True

    def scale(self, endpoint: str, deployed_id: str, min_replicas: int, max_replicas: int) -> Deployed | None:
        """Changes its replica counts in place (MutateDeployedModel: "Only the following fields can be
        mutated: min_replica_count, max_replica_count ..."); None when it is gone."""
        what = f"Scaling DeployedModel {deployed_id} on {endpoint} to {min_replicas}-{max_replicas} replicas"
        resources = aiplatform_v1.DedicatedResources(
            min_replica_count=min_replicas, max_replica_count=max_replicas
        )
        operation = self._call_or_none(
            what,
            lambda: self.client.mutate_deployed_model(
                endpoint=endpoint,
                deployed_model=aiplatform_v1.DeployedModel(id=deployed_id, dedicated_resources=resources),
                update_mask=field_mask_pb2.FieldMask(paths=list(REPLICA_MASK)),
                timeout=CALL_TIMEOUT_SECONDS,
            ),
        )
        if operation is None:
            return None
        self.say(f"{what[0].lower()}{what[1:]} ({operation.operation.name})")
        self._await(what, operation)
        return self.find(endpoint, deployed_id)

    def _call_or_none(self, what: str, call: Callable[[], T]) -> T | None:
        """The call's answer, or None when what it names is gone (NOT_FOUND)."""
        try:
            return self._call(what, call)
        except DeploymentError as exc:
            if isinstance(exc.api_error, gexc.NotFound):
                return None
            raise

    def _await(self, what: str, operation: Any) -> Any:
        """The operation's result, polled with a heartbeat line; an error past the deadline."""
        started = last = time.time()

        def read(done: bool) -> bool:
            nonlocal last
            if time.time() - last >= HEARTBEAT_SECONDS:
                last = time.time()
                self.say(f"still {what[0].lower()}{what[1:]} after {int(last - started)}s")
            return bool(operation.done())

        finished = poll_until(bool(operation.done()), read, bool, self.deadline, self.interval)
        if not finished:
            raise DeploymentError(
                f"{what}: Vertex AI accepted the request but its operation {operation.operation.name} had "
                f"not finished after {int(time.time() - started)}s. Check the endpoint in the console, "
                "then run `pulumi refresh` and `pulumi up` again (the deployment is found again by its id)."
            ) from None
        try:
            return operation.result(timeout=CALL_TIMEOUT_SECONDS)
        except (concurrent.futures.TimeoutError, gexc.RetryError):
            raise DeploymentError(f"{what}: the operation's result could not be read; retry.") from None
        except gexc.GoogleAPICallError as exc:
            raise DeploymentError(explain(exc, what, self.project, self.region), exc) from None


def explain(exc: gexc.GoogleAPICallError, what: str, project: str, region: str) -> str:
    """What a permanent EndpointService error means and what to do, in one paragraph."""
    message = exc.message or str(exc)
    if isinstance(exc, gexc.TooManyRequests):
        return (
            f"{what} was refused for quota (429 RESOURCE_EXHAUSTED): {message} A deployment counts its "
            "max replicas against the project's Vertex AI serving quotas in the region, and a retraining "
            "holds the old and the new deployment at once; lower maxReplicas or request more quota "
            f"(https://console.cloud.google.com/iam-admin/quotas?project={project})."
        )
    if isinstance(exc, gexc.PermissionDenied):
        return (
            f"{what} was denied in project {project}: {message} The identity running Pulumi needs "
            "roles/aiplatform.user on the project (aiplatform.endpoints.deploy / undeploy)."
        )
    if isinstance(exc, gexc.InvalidArgument):
        return (
            f"Vertex AI rejected the deployment ({what}): {message} Check vertex-training:endpoint "
            f"(machineType, acceleratorType, acceleratorCount, replicas) against the machine types "
            f"Vertex AI serves in {region}."
        )
    if isinstance(exc, gexc.NotFound):
        return f"{what}: {message} The endpoint or the model version no longer exists; run `pulumi refresh`."
    return f"{what} failed ({retries.code_name(exc)}): {message}"
