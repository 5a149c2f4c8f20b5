"""A job's request, parsed once at the provider boundary (`JobRequest`), and the request on one shape of its
chain (`Placed`, made once per attempt). Modelled on python-aiplatform (the CustomJob proto built once and
carried) and SkyPilot (a placement applied with one method on an immutable value)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self

from typing_extensions import TypeVar

from infra.vertex.capacity import placement
from infra.vertex.capacity.placement import Shape
from infra.vertex.capacity.reservations import Reservation
from infra.vertex.cost import limits, pricing
from infra.vertex.lifecycle import restarts

if TYPE_CHECKING:
    from infra.vertex.lifecycle.kind import Kind


@dataclass(frozen=True)
class Common:
    """What every kind's request holds beside its own part (its body's `common`, parsed once)."""

    display_name: str
    labels: Mapping[str, str]
    service_account: str
    output_dir: str  # the kind's own output directory (its `output_key`): run.json goes there
    timeout_seconds: float  # as given (3600, not 3600.0: messages print it)
    project: str
    region: str  # where it runs: the home region, or its shape's ("" for a local run)
    # The home region's TensorBoard instance ("": none, a kind without one, or a shape outside the home
    # region: placement.tensorboard_note).
    tensorboard: str
    max_wait_seconds: int | None  # FLEX_START only: how long Vertex may look for machines

    @classmethod
    def of(cls, props: Mapping[str, Any], output_key: str) -> Common:
        wait = props.get("max_wait_seconds")
        return cls(
            display_name=str(props.get("display_name") or ""),
            labels=dict(props.get("labels") or {}),
            service_account=str(props.get("service_account") or ""),
            output_dir=str(props.get(output_key) or ""),
            timeout_seconds=props.get("timeout_seconds", 0),
            project=str(props.get("project") or ""),
            region=str(props.get("region") or ""),
            tensorboard=str(props.get("tensorboard") or ""),
            max_wait_seconds=None if wait is None else int(wait),
        )

    def on(self, shape: Shape) -> Common:
        """In the shape's region, without the home region's TensorBoard, when the shape moves out of it."""
        moved = placement.moves_from(self.region, shape)
        return replace(self, region=shape.region, tensorboard="") if moved else self


class Body(Protocol):
    """A kind's whole request, typed (its spec's `body`): the common part, its machines, itself on a shape."""

    @property
    def common(self) -> Common: ...
    @property
    def pools(self) -> tuple[placement.Pool, ...]: ...

    def on(self, shape: Shape) -> Self:
        """The request on `shape` (a dataclasses.replace): what one attempt submits."""
        ...


# A kind's body type; bare `JobRequest`/`Placed` (the lifecycle's, for every kind) take the protocol.
B = TypeVar("B", bound=Body, default=Body, covariant=True)


@dataclass(frozen=True)
class JobRequest(Generic[B]):
    """What every kind's job asks for, parsed once: the shared fields, the kind's typed `body`, its chain and
    key label; `props`: the defaulted request as the engine sent it (read for the key and the outputs)."""

    props: Mapping[str, Any] = field(repr=False)
    body: B  # the kind's whole request (its spec's `body`): pools, container, identity, its own inputs
    runner: str
    # As given (None when absent, as messages print them); the vertex runner requires both (checks.py).
    project: str | None
    region: str | None  # the home region: the stack's, where its bucket is
    wait: bool
    poll_interval_seconds: float
    queue_timeout_seconds: float  # as given (3600, not 3600.0: messages print it)
    max_cost_usd: float | None  # the dollar cap; None on the local runner, which bills nothing
    max_restarts: int
    capacity_deadline_seconds: float
    allow_unpriced_shapes: bool  # a shape without a price runs uncounted (cost/limits.py)
    # What the chain is made of, besides the body's machines (read at the boundary, resolved when needed).
    scheduling_strategy: str
    reservation: Reservation | None
    fallbacks: tuple[Mapping[str, Any], ...]
    fallback_regions: tuple[str, ...]
    max_hourly_usd: float | None  # the job's hourly ceiling (a fallback entry may set its own)
    kind: Kind[B] = field(repr=False)

    @classmethod
    def parse(
        cls, kind: Kind[B], props: Mapping[str, Any], submitted: Mapping[str, Any] | None = None
    ) -> JobRequest[B]:
        """The request in `props`, defaulted by the kind; with `submitted` (the outputs of the job that runs),
        the inputs fixed at submission (`kind.fixed_at_submit`) are the job's, not the new ones."""
        found = kind.spec.with_defaults(props)
        for key in kind.fixed_at_submit if submitted is not None else ():
            found.pop(key, None)
            if submitted is not None and submitted.get(key) is not None:
                found[key] = submitted[key]
        runner = str(found.get("runner", "vertex"))
        cap = found.get("max_cost_usd")
        return cls(
            props=found,
            body=kind.spec.body(found),
            runner=runner,
            project=found.get("project"),
            region=found.get("region"),
            wait=bool(found.get("wait", True)),
            poll_interval_seconds=float(found.get("poll_interval_seconds", 30.0)),
            queue_timeout_seconds=found.get("queue_timeout_seconds", 0),
            max_cost_usd=float(cap) if cap is not None and runner == "vertex" else None,
            max_restarts=int(found.get("max_restarts", restarts.DEFAULT_MAX_RESTARTS)),
            capacity_deadline_seconds=float(found.get("capacity_deadline_seconds") or 0),
            allow_unpriced_shapes=bool(found.get("allow_unpriced_shapes")),
            scheduling_strategy=str(found.get("scheduling_strategy") or placement.default_strategy(found)),
            reservation=Reservation.of(found.get("reservation_affinity")),
            fallbacks=tuple(found.get("fallbacks") or ()),
            fallback_regions=tuple(found.get("fallback_regions") or ()),
            max_hourly_usd=None if found.get("max_hourly_usd") is None else float(found["max_hourly_usd"]),
            kind=kind,
        )

    @cached_property
    def chain(self) -> tuple[Shape, ...]:
        """The shapes tried in order (placement.chain_of), computed once, when first needed (a delete of a job
        never needs it)."""
        chief = self.pools[0]
        primary = placement.primary_of(chief, self.scheduling_strategy, self.home, self.reservation)
        return tuple(placement.chain_of(primary, self.fallbacks, self.fallback_regions))

    @property
    def pools(self) -> tuple[placement.Pool, ...]:
        """The job's own machines (its body's), before any shape applies."""
        return self.body.pools

    @property
    def common(self) -> Common:
        return self.body.common

    @cached_property
    def ceilings(self) -> tuple[float | None, ...]:
        """Each shape's hourly ceiling, in chain order: its fallback entry's max_hourly_usd, else the job's
        (cost/limits.py ceiling_of); None: no ceiling."""
        return tuple(
            limits.ceiling_of(self.max_hourly_usd, self.fallbacks, index, self.chain)
            for index in range(len(self.chain))
        )

    @cached_property
    def key(self) -> str:
        """The key label's value: the same inputs find the same job."""
        return str(self.kind.spec.job_key(self.props))

    @property
    def on_vertex(self) -> bool:
        return self.runner == "vertex"

    def regions(self) -> list[str]:
        """Every region the chain names, the home region first (where adoption and the kill switch look)."""
        if not self.on_vertex:
            return [self.home]
        return list(dict.fromkeys([self.home, *(shape.region for shape in self.chain)]))

    @property
    def home(self) -> str:
        return self.region or ""

    def job_region(self, job_name: str) -> str:
        """Where the named job lives (its resource name), else the home region (local runs, no job yet)."""
        return placement.region_of(job_name or "") or self.home

    def on(self, shape: Shape, index: int | None = None) -> Placed[B]:
        """This request on `shape`; `index`: its place in the chain (default: where the chain holds it)."""
        if index is None:
            index = self.chain.index(shape) if shape in self.chain else 0
        return Placed(self, shape, index)


@dataclass(frozen=True)
class Placed(Generic[B]):
    """A request on one shape of its chain: what one attempt submits, waits for, caps and reports."""

    request: JobRequest[B]
    shape: Shape
    index: int  # the shape's place in the chain (the attempt label names it)

    @property
    def region(self) -> str | None:
        """The shape's region, else the home region as given (None when absent: a local run)."""
        return self.shape.region or self.request.region

    @property
    def strategy(self) -> str:
        return self.shape.scheduling_strategy

    @property
    def spot(self) -> bool:
        return self.strategy == "SPOT"

    @property
    def flex_start(self) -> bool:
        return self.strategy == "FLEX_START"

    @cached_property
    def body(self) -> B:
        """The kind's whole request on this shape (its body's `on`): what the request builder reads."""
        return self.request.body.on(self.shape)

    @property
    def pools(self) -> tuple[placement.Pool, ...]:
        """The machines this attempt runs on: the job's pools on this shape."""
        return self.body.pools

    @cached_property
    def rate(self) -> pricing.Rate | None:
        """An hour of this shape (all pools, its region) at list price, or the on-demand bound of an unpriced
        Spot/FLEX_START shape (pricing.shape_rate); None unpriced, or locally (no price catalog looked up)."""
        if not self.request.on_vertex:
            return None
        return pricing.shape_rate(self.region or "", self.pools, self.strategy, self.request.project)

    def unpriced_items(self) -> list[str]:
        """The items of this shape's machines that have no price (pricing.missing)."""
        return pricing.missing(self.region or "", self.pools, self.strategy, self.request.project)
