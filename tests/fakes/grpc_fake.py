"""The gRPC scaffolding every fake Google service shares: a call log, per-method fault and delay injection,
and serving its handlers on a localhost port (beside other fakes' handlers)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc


class Abort(Exception):
    """Raised by a fake's method to end the call with a gRPC status, as the service would."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# How a fake answers one method: request -> response (or raises Abort), the request type, the serializer.
Method = tuple[Callable[[Any], object], type, Callable[[Any], bytes]]


def page_of(found: list[Any], page_token: str, page_size: int, default_size: int) -> tuple[list[Any], str]:
    """One page of a list method's results and the standard next-page token ("" on the last page), as AIP-158
    describes them: `page_size` results at most (the service's own size when unset), the token resumes."""
    start = int(page_token or 0)
    size = page_size or default_size
    return found[start : start + size], str(start + size) if start + size < len(found) else ""


@dataclass
class _Fault:
    code: grpc.StatusCode
    message: str
    remaining: int
    applied: bool


class FakeService:
    """Base of the fakes: `calls` (method, request) and `metadata` per call, in order; faults via `fail`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        # The gRPC metadata of each call, in order (e.g. the x-goog-request-params routing header).
        self.metadata: list[dict[str, str]] = []
        self._faults: dict[str, list[_Fault]] = {}
        self._delays: dict[str, list[float]] = {}
        self._lock = threading.RLock()
        self._server: grpc.Server | None = None

    def handler(self) -> grpc.GenericRpcHandler:
        """The service's methods, to serve alone (`start`) or beside other fakes (a fake of one service)."""
        raise NotImplementedError

    def handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        """Every service's methods (a fake of several services overrides this)."""
        return (self.handler(),)

    def start(self, *others: grpc.GenericRpcHandler) -> str:
        """Serve this fake (and `others`, other fakes' handlers) on a localhost port; returns host:port."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers((*self.handlers(), *others))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._server = server
        return f"127.0.0.1:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None

    def fail(
        self,
        method: str,
        code: grpc.StatusCode,
        times: int = 1,
        message: str = "",
        *,
        applied: bool = False,
    ) -> None:
        """Make the next `times` calls of `method` fail with `code`.

        applied=True: the call takes effect before the error is returned (a response lost on the way back).
        """
        with self._lock:
            self._faults.setdefault(method, []).append(
                _Fault(code, message or f"injected {code.name}", times, applied)
            )

    def slow(self, method: str, seconds: float, times: int = 1) -> None:
        """Make the next `times` calls of `method` answer only after `seconds` (a hung connection)."""
        with self._lock:
            self._delays.setdefault(method, []).extend([seconds] * times)

    def methods(self) -> list[str]:
        """Names of the methods called so far, in order."""
        return [name for name, _ in self.calls]

    def _service(self, service: str, methods: dict[str, Method]) -> grpc.GenericRpcHandler:
        """A gRPC service of `methods`: name -> (fn, request type, response serializer)."""
        return grpc.method_handlers_generic_handler(
            service, {name: self._method(name, *method) for name, method in methods.items()}
        )

    def _method(
        self,
        method: str,
        fn: Callable[[object], object],
        request_type: type,
        serialize: Callable[[object], bytes],
    ) -> grpc.RpcMethodHandler:
        """`fn` (request -> response, or raises Abort) as a unary gRPC method with the injected faults."""

        def behaviour(request: object, context: grpc.ServicerContext) -> object:
            with self._lock:
                delays = self._delays.get(method) or []
                delay = delays.pop(0) if delays else 0.0
            if delay:
                time.sleep(delay)  # outside the lock: other calls go on meanwhile
            with self._lock:
                self.calls.append((method, request))
                self.metadata.append(dict(context.invocation_metadata()))
                fault = self._take_fault(method)
                if fault is not None and not fault.applied:
                    context.abort(fault.code, fault.message)
                try:
                    response = fn(request)
                except Abort as abort:
                    context.abort(abort.code, abort.message)
                if fault is not None:
                    context.abort(fault.code, fault.message)
                return response

        return grpc.unary_unary_rpc_method_handler(
            behaviour, request_deserializer=request_type.deserialize, response_serializer=serialize
        )

    def _take_fault(self, method: str) -> _Fault | None:
        queue = self._faults.get(method) or []
        if not queue:
            return None
        fault = queue[0]
        fault.remaining -= 1
        if fault.remaining <= 0:
            queue.pop(0)
        return fault


class Protobuf:
    """A plain protobuf message class (the IAM mixins' iam_policy_pb2, not proto-plus) as `_service` takes
    request types: with `deserialize`; answer such messages with `serialize_protobuf`."""

    def __init__(self, message: Any) -> None:
        self.deserialize = message.FromString


def serialize_protobuf(message: Any) -> bytes:
    return message.SerializeToString()
