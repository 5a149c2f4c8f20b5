"""What a job ended with, as one frozen value: the lifecycle's summary, run.json and a kind's `ended` read it;
`as_outputs` makes the engine's dict from it once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The shared outputs every kind's job has, in the contract's order (ARCHITECTURE.md).
SHARED = ("job_name", "state", "console_url", "create_time", "start_time", "end_time", "error")


@dataclass(frozen=True)
class Outcome:
    """The job's inputs as given, its name, state, times and error, the shape it ran on (`placement`), every
    attempt, and the kind's own outputs (`own`: a study's trials, a batch job's predictions_dir, ...)."""

    inputs: Mapping[str, Any]
    job_name: str
    state: str
    console_url: str = ""
    create_time: str = ""
    start_time: str = ""
    end_time: str = ""
    error: str = ""
    placement: Mapping[str, Any] | None = None
    attempts: tuple[Mapping[str, Any], ...] = ()
    own: Mapping[str, Any] | None = None

    @classmethod
    def stored(cls, outputs: Mapping[str, Any], inputs: tuple[str, ...] = ()) -> Outcome:
        """The outcome an engine's outputs dict holds (stored by this or an earlier version): `inputs` are
        the kind's input names; what is neither an input nor shared is the kind's own."""
        taken = set(SHARED) | {"placement", "attempts", *inputs}
        return cls(
            inputs={k: outputs[k] for k in inputs if k in outputs},
            **{k: str(outputs.get(k) or "") for k in SHARED},
            placement=outputs.get("placement"),
            attempts=tuple(outputs.get("attempts") or ()),
            own={k: v for k, v in outputs.items() if k not in taken},
        )

    def get(self, key: str, default: Any = None) -> Any:
        """One of the kind's own outputs (or an input when the kind has no such output)."""
        own = self.own or {}
        return own[key] if key in own else self.inputs.get(key, default)

    def failed(self, error: str) -> Outcome:
        """The same outcome ended by `error` (the lifecycle's message, which says more than the job's)."""
        return Outcome(**{**self.__dict__, "error": error})

    def as_outputs(self) -> dict[str, Any]:
        """The engine's outputs: the inputs, the shared outputs, then the kind's own."""
        return {
            **self.inputs,
            **{k: getattr(self, k) for k in SHARED},
            "placement": dict(self.placement or {}),
            "attempts": [dict(a) for a in self.attempts],
            **(self.own or {}),
        }
