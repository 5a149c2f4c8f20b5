"""The batch prediction in the real dynamic-provider host, started as the engine starts it: a preview with
upstream outputs unknown passes Check; up creates and waits on the fake JobService; destroy cancels and
deletes. Inputs are what the Python SDK serialized for a real BatchPrediction resource."""

from __future__ import annotations

from typing import Any

import pulumi_gcp as gcp
from google.cloud import aiplatform_v1
from google.protobuf import struct_pb2
from pulumi.runtime.rpc import UNKNOWN

from infra.vertex.batch.resource import RESOURCE_TYPE, BatchPrediction, BatchPredictionArgs
from tests.engine.host import plain
from tests.fakes.pulumi_mocks import run_program
from tests.fakes.storage import FakeStorage
from tests.fakes.vertex import FakeJobService
from tests.vertex.batch_props import put_model

PROJECT, REGION = "demo-project", "us-central1"
IMAGES = "gs://demo-bucket/held-back/"
MODEL_DIR = "gs://demo-bucket/runs/1/model/"
SERVING_IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/vertex-training-dev/serving@sha256:" + "5" * 64


def recorded(*, preview: bool) -> struct_pb2.Struct:
    """The BatchPrediction's inputs as the SDK sent them; the model dir and the identity come from an
    upstream resource (unknown in a preview)."""

    def program() -> Any:
        account = gcp.serviceaccount.Account("trainer", account_id="trainer", project=PROJECT)
        job = BatchPrediction(
            "predict",
            BatchPredictionArgs(
                project=PROJECT,
                region=REGION,
                display_name="engine-batch",
                images=IMAGES,
                output_dir="gs://demo-bucket/predictions/1",
                service_account=account.email,
                artifact_uri=account.email.apply(lambda _: MODEL_DIR),
                serving_image=account.email.apply(lambda _: SERVING_IMAGE),
                labels={"managed-by": "pulumi", "pulumi_stack": "dev"},
                timeout_seconds=600,
                max_replica_count=2,
                fallbacks=[{"machine_type": "n1-highmem-8"}],
                poll_interval_seconds=0.05,
            ),
        )
        return job.job_name

    return run_program(program, stack="dev", preview=preview).one(RESOURCE_TYPE).struct


def test_preview_up_and_destroy_through_the_host(start_host, tmp_path):
    jobs, storage = FakeJobService(), FakeStorage()
    storage.put(IMAGES + "a.jpg", b"x")
    put_model(storage, MODEL_DIR)
    host = start_host(VERTEX_AI_EMULATOR_HOST=jobs.start(), STORAGE_EMULATOR_HOST=storage.start())
    try:
        preview = recorded(preview=True)
        assert plain(preview)["artifact_uri"] == UNKNOWN and plain(preview)["service_account"] == UNKNOWN
        assert plain(preview)["serving_image"] == UNKNOWN
        assert list(host.check(preview).failures) == []

        checked = host.check(recorded(preview=False))
        assert list(checked.failures) == []
        created = host.create(checked.inputs)
        outs = plain(created.properties)
        assert created.id.startswith(f"projects/{PROJECT}/locations/{REGION}/batchPredictionJobs/")
        assert outs["state"] == "JOB_STATE_SUCCEEDED"
        assert outs["completion_stats"]["successful_count"] == 3
        assert outs["predictions_dir"].startswith("gs://demo-bucket/predictions/1/prediction-engine-batch-")
        assert storage.get("gs://demo-bucket/predictions/1/run.json")

        # Destroy of a job still running: cancelled, then deleted.
        jobs.auto_advance = False
        struct = struct_pb2.Struct()
        struct.update({**plain(checked.inputs), "wait": False, "display_name": "engine-batch-2"})
        running = host.create(struct)
        jobs.set_state(running.id, aiplatform_v1.JobState.JOB_STATE_RUNNING)
        host.delete(running.id, running.properties)
        assert running.id not in jobs.jobs
        assert "CancelBatchPredictionJob" in [method for method, _ in jobs.calls]
    finally:
        jobs.stop()
        storage.stop()
