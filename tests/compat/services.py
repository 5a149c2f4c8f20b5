"""The fake Google services the stored resources live in: taken down as JSON when the state is recorded, put
back (under the stored names) before the stored state is replayed. Cloud Storage holds the stack's bucket as
a batch job reads it (the images, the trainer's model dir) from the start; what a job wrote under its
output_dir is stored with the job."""

from __future__ import annotations

import json
from typing import Any

from google.cloud import aiplatform_v1
from google.cloud.devtools import cloudbuild_v1

from tests.fakes.cloudbuild import FakeCloudBuild
from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.model_service import FakeModelService
from tests.fakes.storage import FakeStorage
from tests.fakes.vertex_tuning import FakeTuningJobService

# The stack's bucket as a batch job reads it: the images it classifies (a corrupt one among them) and the
# trainer's model dir with the files the prediction server needs (serving/model_files.py REQUIRED_FILES) and,
# as the trainer exported it up to 6e3517c, its serving_bytes/ SavedModel (what batch jobs read until then).
# Spelled out, not imported: serving/ is newer than some recorded commits.
IMAGES = "gs://demo-bucket/held-back/"
MODEL_DIR = "gs://demo-bucket/runs/1/model/"
BATCH_OUTPUT_DIR = "gs://demo-bucket/predictions/1"
GOOD_IMAGES = ("cats/a.jpg", "dogs/b.png")
CORRUPT_IMAGE = "dogs/broken.png"
MODEL_FILES = ("saved_model.pb", "assets/class_names.txt")
BYTES_EXPORT = "serving_bytes/"
# The stack's endpoint (the native AiEndpoint: not a dynamic resource, so held by the fakes from the start).
ENDPOINT = "projects/demo-project/locations/us-central1/endpoints/1234"


class Fakes:
    """Every fake service the providers reach: the gRPC ones on one port (VERTEX_AI_EMULATOR_HOST), Cloud
    Storage on its own (STORAGE_EMULATOR_HOST)."""

    def __init__(self) -> None:
        self.jobs = FakeTuningJobService()
        self.models = FakeModelService()
        self.models.operation_polls = 0  # the client's first operation poll waits about a second
        self.builds = FakeCloudBuild()
        self.storage = FakeStorage()
        self.endpoints = FakeEndpointService()
        self.endpoints.operation_polls = 0
        self.endpoints.add_endpoint(ENDPOINT, {"pulumi_stack": "dev"})
        self.address = ""
        self.storage_address = ""
        # A batch job's results as Vertex writes them (key_field "key"): the model answers every image, the
        # corrupt one with an `error`, which Vertex counts successful and the provider counts failed.
        self.jobs.batch_successful, self.jobs.batch_failed = len(GOOD_IMAGES) + 1, 0
        self.jobs.batch_writes = self._write_results
        for name in (*GOOD_IMAGES, CORRUPT_IMAGE):
            self.storage.put(IMAGES + name, b"\x89PNG not decoded by the fakes")
        for folder in (MODEL_DIR, MODEL_DIR + BYTES_EXPORT):
            for name in MODEL_FILES:
                self.storage.put(folder + name, b"exported")

    def start(self) -> str:
        """Serve them all; returns (and keeps as `address`) the host:port for VERTEX_AI_EMULATOR_HOST."""
        handlers = (*self.models.handlers(), *self.builds.handlers(), self.endpoints.handler())
        self.address = self.jobs.start(*handlers)
        self.storage_address = self.storage.start()
        return self.address

    def env(self) -> dict[str, str]:
        """The provider host's environment for these services (after `start`)."""
        return {"VERTEX_AI_EMULATOR_HOST": self.address, "STORAGE_EMULATOR_HOST": self.storage_address}

    def stop(self) -> None:
        self.jobs.stop()
        self.storage.stop()

    def _write_results(self, predictions_dir: str) -> None:
        def line(name: str, error: str) -> str:
            classes, probabilities = (["", ""], [0, 0]) if error else (["dogs", "cats"], [0.9, 0.1])
            prediction = {"top_class": classes[0], "classes": classes, "probabilities": probabilities}
            return json.dumps({"key": IMAGES + name, "prediction": {**prediction, "error": error}}) + "\n"

        lines = [line(name, "") for name in GOOD_IMAGES] + [line(CORRUPT_IMAGE, "not an image")]
        self.storage.put(predictions_dir + "/prediction.results-00000-of-00001", "".join(lines).encode())

    def snapshot(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """What the services held for the resource with these outputs, as JSON (a local job: nothing)."""
        if outputs.get("runner") == "local":
            return {}
        if "deployed_model_id" in outputs:  # a Deployment: its endpoint, the model deployed on it
            return {"endpoints": [_json(self.endpoints.endpoints[outputs["endpoint"]])]}
        if "predictions_dir" in outputs:  # a BatchPredictionJob: every attempt's, and what it wrote
            names = [a["job_name"] for a in outputs["attempts"] if a.get("job_name")]
            prefix = outputs["output_dir"].removeprefix("gs://").rstrip("/") + "/"
            written = {
                f"gs://{bucket}/{name}": data.decode()
                for (bucket, name), data in sorted(self.storage.objects.items())
                if f"{bucket}/{name}".startswith(prefix)
            }
            return {"batch_jobs": [_json(self.jobs.jobs[name]) for name in names], "objects": written}
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
        for value in stored.get("batch_jobs", []):
            batch = _proto(aiplatform_v1.BatchPredictionJob, value)
            self.jobs.jobs[batch.name] = batch
        for uri, text in stored.get("objects", {}).items():
            self.storage.put(uri, text.encode())
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
        for value in stored.get("endpoints", []):
            endpoint = _proto(aiplatform_v1.Endpoint, value)
            self.endpoints.endpoints[endpoint.name] = endpoint


def _json(message: Any) -> dict[str, Any]:
    return json.loads(type(message).to_json(message, use_integers_for_enums=False))


def _proto(kind: Any, value: dict[str, Any]) -> Any:
    return kind.from_json(json.dumps(value))
