"""What a job ended with, as one frozen value: the lifecycle's summary, run.json and a kind's `ended` read it;
`as_outputs` makes the engine's dict from it once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Generic, Protocol, Self

from typing_extensions import TypeVar

from infra.vertex.lifecycle.status import JobStatus

# The shared outputs every kind's job has (JobStatus's fields, by output name), in the contract's order.
SHARED = {
    "job_name": "name",
    "state": "state",
    "console_url": "console_url",
    "create_time": "create_time",
    "start_time": "start_time",
    "end_time": "end_time",
    "error": "error",
}
# A field's metadata for an output absent, not empty, while unknown or not reached (as every earlier
# version wrote it).
SPARSE = {"sparse": True}


@dataclass(frozen=True, kw_only=True)
class Ran:
    """The kind's own outputs that every kind has (estimated_cost_usd: None off Vertex or partly unpriced); a
    kind's outputs type adds its fields, named as its outputs."""

    duration_seconds: float = 0.0
    estimated_cost_usd: float | None = field(default=None, metadata=SPARSE)
    estimated_cost_bound: bool = field(default=False, metadata=SPARSE)
    cost_cap_reached: bool = field(default=False, metadata=SPARSE)

    @classmethod
    def stored(cls, outputs: Mapping[str, Any]) -> Self:
        """From an engine's outputs, stored by this or an earlier version: the fields they hold."""
        return cls(**{f.name: outputs[f.name] for f in fields(cls) if outputs.get(f.name) is not None})

    def as_outputs(self) -> dict[str, Any]:
        values = [(f, getattr(self, f.name)) for f in fields(self)]
        return {
            f.name: v for f, v in values if not f.metadata.get("sparse") or (v is not None and v is not False)
        }


# Default Ran: code that reads any kind's outcome (run.json, the dollar cap) sees what every kind has.
OwnT = TypeVar("OwnT", bound=Ran, default=Ran, covariant=True)


class OutcomeKind(Protocol[OwnT]):
    """What reading stored outputs needs of a kind (lifecycle/kind.py Kind): its inputs and outputs type."""

    @property
    def input_names(self) -> tuple[str, ...]: ...
    @property
    def outputs_type(self) -> type[OwnT]: ...


@dataclass(frozen=True)
class Outcome(Generic[OwnT]):
    """The job's inputs as given, its status (name, state, times, error), the shape it ran on (`placement`),
    every attempt, and the kind's own outputs (`own`: a study's trials, a batch job's predictions_dir)."""

    inputs: Mapping[str, Any]
    status: JobStatus
    own: OwnT
    placement: Mapping[str, Any] = field(default_factory=dict)
    attempts: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def stored(cls, outputs: Mapping[str, Any], kind: OutcomeKind[OwnT]) -> Outcome[OwnT]:
        """The outcome an engine's outputs dict of a job of `kind` holds (this or an earlier version's)."""
        return cls(
            inputs={k: outputs[k] for k in kind.input_names if k in outputs},
            status=JobStatus(**_shared(outputs)),
            own=kind.outputs_type.stored(outputs),
            placement=outputs.get("placement") or {},
            attempts=tuple(outputs.get("attempts") or ()),
        )

    @property
    def state(self) -> str:
        return self.status.state

    def failed(self, error: str) -> Outcome[OwnT]:
        """The same outcome ended by `error` (the lifecycle's message, which says more than the job's)."""
        return replace(self, status=replace(self.status, error=error))

    def as_outputs(self) -> dict[str, Any]:
        """The engine's outputs: the inputs, the shared outputs, then the kind's own."""
        return {
            **self.inputs,
            **{key: getattr(self.status, attr) for key, attr in SHARED.items()},
            "placement": dict(self.placement),
            "attempts": [dict(a) for a in self.attempts],
            **self.own.as_outputs(),
        }


def _shared(outputs: Mapping[str, Any]) -> dict[str, Any]:
    return {attr: str(outputs.get(key) or "") for key, attr in SHARED.items()}
