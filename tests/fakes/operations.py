"""Long-running operations as Vertex AI's fakes hand them out: pending until polled enough, then done.

The real clients poll `google.longrunning.Operations.GetOperation` on the same address as the service, so the
fakes served on one port share one `Operations` (a second handler of that service would never be reached).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import grpc
from google.longrunning import operations_pb2
from google.protobuf import any_pb2

from tests.fakes.grpc_fake import Abort, FakeService

SERVICE = "google.longrunning.Operations"


def packed(message: object) -> any_pb2.Any:
    """A proto-plus or protobuf message as an Any."""
    out = any_pb2.Any()
    out.Pack(type(message).pb(message) if hasattr(type(message), "pb") else message)
    return out


class ProtoRequest:
    """A plain protobuf request type as the scaffolding expects one (a `deserialize` class method)."""

    def __init__(self, message_type: type):
        self.deserialize = message_type.FromString


class Operations(FakeService):
    """Operations by name: each is done after `polls` GetOperation calls; `finish` runs when it is done
    (what a deploy or undeploy changes happens then, as the service applies it when its operation ends)."""

    def __init__(self) -> None:
        super().__init__()
        self._pending: dict[str, tuple[int, operations_pb2.Operation, Callable[[], object] | None]] = {}
        self._ids = itertools.count(1)

    def handler(self) -> grpc.GenericRpcHandler:
        return self._service(
            SERVICE,
            {
                "GetOperation": (
                    self._get,
                    ProtoRequest(operations_pb2.GetOperationRequest),
                    operations_pb2.Operation.SerializeToString,
                )
            },
        )

    def start_operation(
        self,
        resource: str,
        metadata: object,
        response: object,
        polls: int,
        finish: Callable[[], object] | None = None,
    ) -> operations_pb2.Operation:
        """A new operation on `resource`: done at once when `polls` is 0 (`finish` run now), else pending.

        `finish` may raise Abort: the operation then ends with that error instead of `response`.
        """
        name = f"{resource}/operations/{next(self._ids)}"
        done = operations_pb2.Operation(name=name, done=True, response=packed(response))
        done.metadata.CopyFrom(packed(metadata))
        with self._lock:
            self._pending[name] = (polls, done, finish)
            if polls == 0:
                return self._finish(name)
        pending = operations_pb2.Operation(name=name, done=False)
        pending.metadata.CopyFrom(done.metadata)
        return pending

    def finish_all(self) -> None:
        """End every pending operation now (the service went on while nobody polled)."""
        with self._lock:
            for name in list(self._pending):
                self._finish(name)

    def tick(self, resource: str) -> None:
        """Time passes for the operations on `resource` as for a poll of each: the service goes on with them
        whether or not anyone asks (a client that lost an operation's name still sees it end)."""
        with self._lock:
            for name, (polls, done, finish) in list(self._pending.items()):
                if finish is None or not name.startswith(f"{resource}/operations/"):
                    continue
                if polls <= 1:
                    self._finish(name)
                else:
                    self._pending[name] = (polls - 1, done, finish)

    def pending(self) -> list[str]:
        with self._lock:
            return [name for name, (_, op, finish) in self._pending.items() if finish is not None]

    def _finish(self, name: str) -> operations_pb2.Operation:
        _polls, done, finish = self._pending[name]
        if finish is not None:
            self._pending[name] = (0, done, None)
            try:
                finish()
            except Abort as abort:
                failed = operations_pb2.Operation(name=name, done=True, metadata=done.metadata)
                failed.error.code, failed.error.message = abort.code.value[0], abort.message
                self._pending[name] = (0, failed, None)
        return self._pending[name][1]

    def _get(self, request: operations_pb2.GetOperationRequest) -> operations_pb2.Operation:
        if request.name not in self._pending:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"Operation {request.name} not found.")
        polls, done, finish = self._pending[request.name]
        if polls <= 1:
            return self._finish(request.name)
        self._pending[request.name] = (polls - 1, done, finish)
        return operations_pb2.Operation(name=request.name, done=False, metadata=done.metadata)
