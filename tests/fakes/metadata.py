"""A fake Vertex AI MetadataService (metadata stores and contexts) served over real gRPC on localhost.

Requests and responses are the library's own proto-plus types, so the real `MetadataServiceClient` drives it
through `VERTEX_AI_EMULATOR_HOST`. As the aiplatform v1 reference documents the methods (read 2026-11-25):
GetMetadataStore / GetContext answer NOT_FOUND for a missing resource; CreateMetadataStore is a long-running
operation (answered done at once here) and ALREADY_EXISTS for an existing id; CreateContext takes a
`context_id` of 4-128 characters from /[a-z][0-9]-/ (INVALID_ARGUMENT otherwise), answers ALREADY_EXISTS for
an id in use, and needs its metadata store; AddContextChildren links existing contexts (the child's
`parent_contexts` lists the parent) and refuses a missing one; UpdateContext sets the fields its update_mask
names (all settable ones without a mask; the OUTPUT_ONLY create_time, update_time and parent_contexts stay
the service's) and refuses a stale etag ("An eTag used to perform consistent read-modify-write updates").
"""

from __future__ import annotations

import datetime
import re

import grpc
from google.cloud import aiplatform_v1
from google.longrunning import operations_pb2
from google.protobuf import any_pb2

from tests.fakes.grpc_fake import Abort, FakeService

SERVICE = "google.cloud.aiplatform.v1.MetadataService"
_CONTEXT_ID = re.compile(r"[a-z0-9-]{4,128}")
_STORE = re.compile(r"projects/[^/]+/locations/[^/]+/metadataStores/[^/]+")
# Context fields a caller may set (context.proto: name is the identifier; create_time, update_time and
# parent_contexts are OUTPUT_ONLY).
_UPDATABLE = frozenset(
    {"display_name", "etag", "labels", "schema_title", "schema_version", "metadata", "description"}
)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _packed(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(type(message).pb(message))
    return packed


class FakeMetadataService(FakeService):
    """In-memory metadata stores and contexts (by resource name); safe to read from tests."""

    def __init__(self) -> None:
        super().__init__()
        self.stores: dict[str, aiplatform_v1.MetadataStore] = {}
        self.contexts: dict[str, aiplatform_v1.Context] = {}
        self.updates: list[aiplatform_v1.UpdateContextRequest] = []  # every UpdateContext request, in order

    def handler(self) -> grpc.GenericRpcHandler:
        op = operations_pb2.Operation.SerializeToString
        context = aiplatform_v1.Context.serialize
        return self._service(
            SERVICE,
            {
                "GetMetadataStore": (
                    self._get_store,
                    aiplatform_v1.GetMetadataStoreRequest,
                    aiplatform_v1.MetadataStore.serialize,
                ),
                "CreateMetadataStore": (self._create_store, aiplatform_v1.CreateMetadataStoreRequest, op),
                "GetContext": (self._get_context, aiplatform_v1.GetContextRequest, context),
                "ListContexts": (
                    self._list_contexts,
                    aiplatform_v1.ListContextsRequest,
                    aiplatform_v1.ListContextsResponse.serialize,
                ),
                "CreateContext": (self._create_context, aiplatform_v1.CreateContextRequest, context),
                "UpdateContext": (self._update_context, aiplatform_v1.UpdateContextRequest, context),
                "AddContextChildren": (
                    self._add_children,
                    aiplatform_v1.AddContextChildrenRequest,
                    aiplatform_v1.AddContextChildrenResponse.serialize,
                ),
            },
        )

    # --- control -------------------------------------------------------------------------------------
    def created(self, schema_title: str) -> list[str]:
        """Names of the contexts of one schema CreateContext made, in order."""
        return [
            f"{request.parent}/contexts/{request.context_id}"
            for method, request in self.calls
            if method == "CreateContext" and request.context.schema_title == schema_title  # type: ignore[attr-defined]
        ]

    # --- methods -------------------------------------------------------------------------------------
    def _get_store(self, request: aiplatform_v1.GetMetadataStoreRequest) -> aiplatform_v1.MetadataStore:
        if request.name not in self.stores:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"MetadataStore {request.name} not found.")
        return self.stores[request.name]

    def _create_store(self, request: aiplatform_v1.CreateMetadataStoreRequest) -> operations_pb2.Operation:
        name = f"{request.parent}/metadataStores/{request.metadata_store_id or 'default'}"
        if name in self.stores:
            raise Abort(grpc.StatusCode.ALREADY_EXISTS, f"MetadataStore {name} already exists.")
        store = aiplatform_v1.MetadataStore(request.metadata_store)
        store.name = name
        store.create_time = _now()
        self.stores[name] = store
        metadata = aiplatform_v1.CreateMetadataStoreOperationMetadata()
        done = operations_pb2.Operation(name=f"{name}/operations/1", done=True, response=_packed(store))
        done.metadata.CopyFrom(_packed(metadata))
        return done

    def _get_context(self, request: aiplatform_v1.GetContextRequest) -> aiplatform_v1.Context:
        if request.name not in self.contexts:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"Context {request.name} not found.")
        return self.contexts[request.name]

    def _list_contexts(
        self, request: aiplatform_v1.ListContextsRequest
    ) -> aiplatform_v1.ListContextsResponse:
        """The store's contexts; of the filter syntax (ListContextsRequest.filter, read 2026-11-27) only
        `parent_contexts:"<context name>"` (the HAS operator) and `schema_title = "..."`, joined by AND; page
        size 1-1000 ("Defaults to 100"), so a caller must follow next_page_token."""
        conditions = [c.strip() for c in request.filter.split(" AND ")] if request.filter else []
        found = [
            c for name, c in sorted(self.contexts.items()) if name.startswith(request.parent + "/contexts/")
        ]
        for condition in conditions:
            field, _, value = re.split(r"\s*(:|=)\s*", condition, maxsplit=1)
            value = value.strip('"')
            if field == "parent_contexts":
                found = [c for c in found if value in c.parent_contexts]
            elif field == "schema_title":
                found = [c for c in found if c.schema_title == value]
            else:
                raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"unsupported filter {condition!r}")
        size = request.page_size or 100
        start = int(request.page_token or 0)
        page = found[start : start + size]
        token = str(start + size) if start + size < len(found) else ""
        return aiplatform_v1.ListContextsResponse(contexts=page, next_page_token=token)

    def _create_context(self, request: aiplatform_v1.CreateContextRequest) -> aiplatform_v1.Context:
        if not _STORE.fullmatch(request.parent) or request.parent not in self.stores:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"MetadataStore {request.parent} not found.")
        if not _CONTEXT_ID.fullmatch(request.context_id):
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"context_id {request.context_id!r}: must be 4-128 characters from /[a-z][0-9]-/.",
            )
        name = f"{request.parent}/contexts/{request.context_id}"
        if name in self.contexts:
            raise Abort(grpc.StatusCode.ALREADY_EXISTS, f"Context {name} already exists.")
        context = aiplatform_v1.Context(request.context)
        context.name = name
        context.create_time = context.update_time = _now()
        self.contexts[name] = context
        return context

    def _update_context(self, request: aiplatform_v1.UpdateContextRequest) -> aiplatform_v1.Context:
        name = request.context.name
        if name not in self.contexts:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"Context {name} not found.")
        stored = self.contexts[name]
        sent = request.context
        if sent.etag and sent.etag != stored.etag:
            raise Abort(grpc.StatusCode.ABORTED, f"Context {name} changed since it was read (etag mismatch).")
        paths = list(request.update_mask.paths)
        unknown = sorted(set(paths) - _UPDATABLE)
        if unknown:
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"update_mask names fields it cannot update: {unknown}"
            )
        updated = aiplatform_v1.Context(stored)
        # With a mask, only the fields it names; without one, every field the caller may set (AIP-134).
        for field in paths or sorted(_UPDATABLE):
            setattr(updated, field, getattr(sent, field))
        self.updates.append(request)
        updated.update_time = _now()
        updated.etag = str(int(stored.etag or "0") + 1)
        self.contexts[name] = updated
        return updated

    def _add_children(
        self, request: aiplatform_v1.AddContextChildrenRequest
    ) -> aiplatform_v1.AddContextChildrenResponse:
        for name in (request.context, *request.child_contexts):
            if name not in self.contexts:
                raise Abort(grpc.StatusCode.NOT_FOUND, f"Context {name} not found.")
        for child in request.child_contexts:
            parents = self.contexts[child].parent_contexts
            if request.context not in parents:
                parents.append(request.context)
        return aiplatform_v1.AddContextChildrenResponse()
