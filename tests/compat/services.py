"""The fake Google services the stored resources live in: taken down as JSON when the state is recorded, put
back (under the stored names) before the stored state is replayed."""

from __future__ import annotations

import json
from typing import Any

from google.cloud import aiplatform_v1
from google.cloud.devtools import cloudbuild_v1

from tests.fakes.cloudbuild import FakeCloudBuild
from tests.fakes.model_service import FakeModelService
from tests.fakes.vertex_tuning import FakeTuningJobService


class Fakes:
    """Every fake service the four providers reach, served on one port (VERTEX_AI_EMULATOR_HOST)."""

    def __init__(self) -> None:
        self.jobs = FakeTuningJobService()
        self.models = FakeModelService()
        self.models.operation_polls = 0  # the client's first operation poll waits about a second
        self.builds = FakeCloudBuild()
        self.address = ""

    def start(self) -> str:
        """Serve them all; returns (and keeps as `address`) the host:port for VERTEX_AI_EMULATOR_HOST."""
        self.address = self.jobs.start(*self.models.handlers(), *self.builds.handlers())
        return self.address

    def stop(self) -> None:
        self.jobs.stop()

    def snapshot(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """What the services held for the resource with these outputs, as JSON (a local job: nothing)."""
        if outputs.get("runner") == "local":
            return {}
        if "attempts" in outputs and "trials" not in outputs:  # a CustomJob: every attempt's job
            names = [a["job_name"] for a in outputs["attempts"] if a.get("job_name")]
            return {"custom_jobs": [_json(self.jobs.jobs[name]) for name in names]}
        if "trials" in outputs:
            return {"tuning_jobs": [_json(self.jobs.tuning_jobs[outputs["job_name"]])]}
        if "version_name" in outputs:
            return {
                "model_versions": [_json(v) for v in self.models.versions(outputs["model_name"]).values()]
            }
        build = self.builds.builds[outputs["build_name"]]
        return {"builds": [_json(build)], "tags": dict(self.builds.tags)}

    def seed(self, stored: dict[str, Any]) -> None:
        """Put stored objects back under their stored names; they stay in their state until a client acts."""
        for value in stored.get("custom_jobs", []):
            job = _proto(aiplatform_v1.CustomJob, value)
            self.jobs.jobs[job.name] = job
        for value in stored.get("tuning_jobs", []):
            study = _proto(aiplatform_v1.HyperparameterTuningJob, value)
            self.jobs.tuning_jobs[study.name] = study
        for value in stored.get("model_versions", []):
            version = _proto(aiplatform_v1.Model, value)
            self.models.models.setdefault(version.name, {})[version.version_id] = version
        for value in stored.get("builds", []):
            build = _proto(cloudbuild_v1.Build, value)
            self.builds.builds[build.name] = build
        self.builds.tags.update(stored.get("tags", {}))


def _json(message: Any) -> dict[str, Any]:
    return json.loads(type(message).to_json(message, use_integers_for_enums=False))


def _proto(kind: Any, value: dict[str, Any]) -> Any:
    return kind.from_json(json.dumps(value))
