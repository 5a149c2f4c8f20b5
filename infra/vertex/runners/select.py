"""Where a CustomJob runs: Vertex AI or processes on this machine; both answer the same five verbs."""

from __future__ import annotations

from typing import Any, Protocol

from google.cloud import aiplatform_v1

from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.runners.local.runner import LocalRunner
from infra.vertex.runners.vertex import VertexRunner


class Runner(Protocol):
    def create(self, job: aiplatform_v1.CustomJob) -> JobStatus: ...
    def get(self, name: str) -> JobStatus | None: ...
    def find_by_key(self, key: str) -> JobStatus | None: ...
    def cancel(self, name: str) -> None: ...
    def delete(self, name: str) -> None: ...


def runner_for(props: dict[str, Any]) -> Runner:
    """The runner these props ask for; made fresh for every provider call (never stored on the provider)."""
    first_delay = min(float(props.get("poll_interval_seconds", 30.0)), 1.0)
    if props.get("runner", "vertex") == "local":
        return LocalRunner(props["base_output_dir"])
    return VertexRunner(props["project"], props["region"], first_delay)
