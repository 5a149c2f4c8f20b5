"""What a job ended with, as one frozen value: the lifecycle's summary, run.json and a kind's `ended` read it;
`as_outputs` makes the engine's dict from it once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

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


@dataclass(frozen=True)
class Outcome:
    """The job's inputs as given, its status (name, state, times, error), the shape it ran on (`placement`),
    every attempt, and the kind's own outputs (`own`: a study's trials, a batch job's predictions_dir)."""

    inputs: Mapping[str, Any]
    status: JobStatus
    placement: Mapping[str, Any] = field(default_factory=dict)
    attempts: tuple[Mapping[str, Any], ...] = ()
    own: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def stored(cls, outputs: Mapping[str, Any], inputs: tuple[str, ...] = ()) -> Outcome:
        """The outcome an engine's outputs dict holds (stored by this or an earlier version): `inputs` are
        the kind's input names; what is neither an input nor shared is the kind's own."""
        taken = {*SHARED, "placement", "attempts", *inputs}
        return cls(
            inputs={k: outputs[k] for k in inputs if k in outputs},
            status=_status({attr: str(outputs.get(key) or "") for key, attr in SHARED.items()}),
            placement=outputs.get("placement") or {},
            attempts=tuple(outputs.get("attempts") or ()),
            own={k: v for k, v in outputs.items() if k not in taken},
        )

    @property
    def state(self) -> str:
        return self.status.state

    def get(self, key: str, default: Any = None) -> Any:
        """One of the kind's own outputs (or an input when the kind has no such output)."""
        return self.own[key] if key in self.own else self.inputs.get(key, default)

    def failed(self, error: str) -> Outcome:
        """The same outcome ended by `error` (the lifecycle's message, which says more than the job's)."""
        return replace(self, status=replace(self.status, error=error))

    def as_outputs(self) -> dict[str, Any]:
        """The engine's outputs: the inputs, the shared outputs, then the kind's own."""
        return {
            **self.inputs,
            **{key: getattr(self.status, attr) for key, attr in SHARED.items()},
            "placement": dict(self.placement),
            "attempts": [dict(a) for a in self.attempts],
            **self.own,
        }


def _status(found: Mapping[str, str]) -> JobStatus:
    return JobStatus(
        found["name"], found["state"], found["console_url"], found["error"], found["create_time"],
        found["start_time"], found["end_time"],
    )  # fmt: skip
