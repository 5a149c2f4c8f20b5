"""The resources whose stored state the compatibility test replays, and their inputs as the Python SDK
serializes them (the `__provider` blob included) under Pulumi's mock runtime.

The recorder (record_state.py) and the test (test_stored_state.py) build the same inputs from here: at the
recorded commit they are what today's state was made from; at a later commit they are what the same program
sends again, so a Diff against the stored outputs must find nothing changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pulumi_gcp as gcp
from google.protobuf import json_format, struct_pb2

from infra.cloudbuild.resource import RESOURCE_TYPE as IMAGE_BUILD
from infra.cloudbuild.resource import ImageBuild, ImageBuildArgs
from infra.vertex.batch.resource import RESOURCE_TYPE as BATCH_JOB
from infra.vertex.batch.resource import BatchPrediction, BatchPredictionArgs
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB
from infra.vertex.custom_job.resource import CustomJobArgs, WorkerPool
from infra.vertex.deployment.resource import RESOURCE_TYPE as DEPLOYMENT
from infra.vertex.deployment.resource import Deployment, DeploymentArgs
from infra.vertex.model.resource import RESOURCE_TYPE as MODEL_VERSION
from infra.vertex.model.resource import ModelVersion, ModelVersionArgs
from infra.vertex.tuning.resource import RESOURCE_TYPE as TUNING_JOB
from infra.vertex.tuning.resource import HyperparameterTuningJob, Parameter, StudyArgs
from tests.compat.services import BATCH_OUTPUT_DIR, BYTES_EXPORT, ENDPOINT, IMAGES, MODEL_DIR
from tests.engine.inputs import IMAGE, PROJECT, REGION, JobShape, recorded
from tests.fakes.pulumi_mocks import run_program

# Where a local job's record lives in the stored files: replaced by the test's own directories.
BASE, ROOT = "{BASE}", "{ROOT}"
# The primary shape of the fallback job, out of machines at recording time: the job moves to the next.
STOCKED_OUT = ("n1-standard-8", "NVIDIA_TESLA_T4", "STANDARD")
FALLBACK = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"}
METRICS = {"val_accuracy": 0.75, "val_loss": 0.5}
WRITE_METRICS = (
    "import json, os, pathlib; d = pathlib.Path(os.environ['AIP_MODEL_DIR']); d.mkdir(parents=True); "
    f"(d / 'metrics.json').write_text(json.dumps({METRICS!r}))"
)
# A local trial reports its metric as cloudml-hypertune does: a JSON line in CLOUD_ML_HP_METRIC_FILE.
REPORT_METRIC = (
    "import json, os, pathlib; p = pathlib.Path(os.environ['CLOUD_ML_HP_METRIC_FILE']); "
    "p.parent.mkdir(parents=True, exist_ok=True); p.write_text(json.dumps({'val_accuracy': 0.8}) + '\\n')"
)
SLEEP = "import time; time.sleep(600)"
# Where the local runner keeps a job's record: <base_output_dir>/.vertex-training-local/<id without local/>.
# Spelled out here, not imported: this layout on disk is stored state that later code must still read.
LOCAL_RECORDS = ".vertex-training-local"


def record_dir(base: Path, job_name: str) -> Path:
    return base / LOCAL_RECORDS / job_name.removeprefix("local/")


@dataclass(frozen=True)
class Case:
    """One stored resource: its type, whether it was stored still running, and whether it ran here."""

    name: str
    resource_type: str
    live: bool = False  # stored while running: delete has to cancel it
    local: bool = False  # the local runner: its job directory under base_output_dir is state too
    # The in-place change an Update is tried with (None: the provider has no update, every change replaces).
    update: dict[str, Any] | None = field(default_factory=lambda: {"wait": False})
    # Inputs today's program sets otherwise than the stored program did, on purpose: the first `up` after the
    # change replaces the resource on exactly these. The "same program" diff keeps their stored values.
    upgraded: tuple[str, ...] = ()
    # Of those, the inputs today's Check refuses as the stored program set them (required now), by name.
    refused_as_stored: tuple[str, ...] = ()
    # Where under `base` the local runner keeps its state: a job's base_output_dir (base itself), a batch
    # job's output_dir. Its files are stored; the rest of `base` (a batch job's model and images) is not.
    records_in: str = ""

    def state_dir(self, base: Path) -> Path:
        return base / self.records_in if self.records_in else base

    def inputs(self, base: Path, **changes: Any) -> struct_pb2.Struct:
        """This resource's RegisterResource inputs as the SDK sends them; `base`: a local job's output dir."""
        return _PROGRAMS[self.name](base, changes)


def _job(shape: JobShape) -> Callable[[Path, dict[str, Any]], struct_pb2.Struct]:
    def inputs(base: Path, changes: dict[str, Any]) -> struct_pb2.Struct:
        local = {"base_output_dir": str(base)} if shape.runner == "local" else {}
        return recorded(replace(shape, **local, **changes), preview=False)

    return inputs


def _vertex_job(**fields: Any) -> JobShape:
    return JobShape(unknown=frozenset(), secret_env=False, **fields)


def _local_job(command: str, **fields: Any) -> JobShape:
    return JobShape(
        unknown=frozenset(),
        runner="local",
        command=("python", "-c", command),
        args=(),
        env={"TF_CPP_MIN_LOG_LEVEL": "2"},
        secret_env=False,
        accelerator=False,
        **fields,
    )


def _one(program: Callable[[], Any], resource_type: str) -> struct_pb2.Struct:
    return run_program(program, stack="dev", preview=False).one(resource_type).struct


def _study(base: Path, changes: dict[str, Any], trial_command: str | None = None) -> struct_pb2.Struct:
    """A grid study of two trials, one at a time; with `trial_command`, on the local runner in `base`."""

    def program() -> Any:
        local = trial_command is not None
        pool = WorkerPool(
            machine_type="n1-standard-4" if local else "n1-standard-8",
            accelerator_type=None if local else "NVIDIA_TESLA_T4",
            accelerator_count=0 if local else 1,
            image_uri=f"{IMAGE}:local",
            command=["python", "-c", trial_command] if local else ["python", "-m", "trainer.task"],
            args=[] if local else ["--epochs", "1"],
        )
        where = {"runner": "local", "base_output_dir": str(base)} if local else {}
        fields = {
            "display_name": "compat-study",
            "poll_interval_seconds": 0.05,
            "base_output_dir": "gs://demo-bucket/tune/1",
            **where,
            **changes,
        }
        trial = CustomJobArgs(
            project=PROJECT,
            region=REGION,
            worker_pools=[pool],
            service_account=f"trainer@{PROJECT}.iam",
            labels={"managed-by": "pulumi", "pulumi_stack": "dev"},
            timeout_seconds=600,
            **fields,
        )
        study = StudyArgs(
            metric_id="val_accuracy",
            parameters=[Parameter("learning_rate", "DISCRETE", values=[0.01, 0.001])],
            max_trial_count=2,
            parallel_trial_count=1,
            algorithm="grid",
        )
        return HyperparameterTuningJob("tune", trial, study).job_name

    return _one(program, TUNING_JOB)


# The stack's serving image (serving/), as today's stack passes it to a model version and a batch job.
SERVING_IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/vertex-training-dev/serving@sha256:" + "5" * 64
# Up to 6e3517c the stack named no image: model versions and batch jobs ran in Google's prebuilt container,
# and the batch job read the model dir's serving_bytes/ export (BatchPredictionArgs had no serving_image).
# Since, both run in the stack's serving image, the batch job on the model dir itself. A checkout builds
# them as its own stack did, so the recorder records that commit's program.
OWN_SERVING_IMAGE = "serving_image" in {f.name for f in fields(BatchPredictionArgs)}


def _model(_base: Path, changes: dict[str, Any]) -> struct_pb2.Struct:
    def program() -> Any:
        account = gcp.serviceaccount.Account("trainer", account_id="trainer", project=PROJECT)
        args = ModelVersionArgs(
            project=PROJECT,
            region=REGION,
            model_id="vertex-training-dev",
            display_name="vertex-training-dev",
            artifact_uri="gs://demo-bucket/runs/1/model/",
            labels={"pulumi_stack": "dev"},
            version_aliases=["candidate"],
            service_account=account.email,
            **{**({"serving_image": SERVING_IMAGE} if OWN_SERVING_IMAGE else {}), **changes},
        )
        return ModelVersion("model", args).version_name

    return _one(program, MODEL_VERSION)


def _image(_base: Path, changes: dict[str, Any]) -> struct_pb2.Struct:
    def program() -> Any:
        args = ImageBuildArgs(
            project=PROJECT,
            region=REGION,
            repository="trainer",
            image_name="trainer",
            tag="0123456789abcdef",
            extra_tags=["data-fedcba9876543210"],
            source_bucket="demo-bucket",
            source_object="cloudbuild/context-0123456789abcdef.tar.gz",
            service_account=f"vt-dev-build@{PROJECT}.iam.gserviceaccount.com",
            **{"poll_interval_seconds": 0.05, **changes},
        )
        return ImageBuild("image", args).image_ref

    return _one(program, IMAGE_BUILD)


# The local stack's stand-in for the serving image (infra/stack.py: local:<serving tag>).
LOCAL_SERVING_IMAGE = "local:serving-0123456789abcdef"
BATCH_FOLDERS = ("model", "images", "predictions")  # a local batch job's, under base


def _batch(local: bool, **extra: Any) -> Callable[[Path, dict[str, Any]], struct_pb2.Struct]:
    """A batch prediction of the stack's images by the trained model; local: all three folders under base."""

    def inputs(base: Path, changes: dict[str, Any]) -> struct_pb2.Struct:
        model, images, output = (str(base / f) for f in BATCH_FOLDERS) if local else (MODEL_DIR, IMAGES, "")
        served = (
            {"artifact_uri": model, "serving_image": LOCAL_SERVING_IMAGE if local else SERVING_IMAGE}
            if OWN_SERVING_IMAGE
            else {"artifact_uri": model.rstrip("/") + "/" + BYTES_EXPORT}
        )
        where = {"runner": "local"} if local else {}

        def program() -> Any:
            props = {
                "display_name": "compat-predict",
                "output_dir": output or BATCH_OUTPUT_DIR,
                "poll_interval_seconds": 0.05,
                **served,
                **where,
                **extra,
                **changes,
            }
            args = BatchPredictionArgs(
                project=PROJECT,
                region=REGION,
                images=images,
                service_account=f"trainer@{PROJECT}.iam.gserviceaccount.com",
                labels={"managed-by": "pulumi", "pulumi_stack": "dev"},
                timeout_seconds=3600,
                **props,
            )
            return BatchPrediction("predict", args).job_name

        return _one(program, BATCH_JOB)

    return inputs


def _deployment(_base: Path, changes: dict[str, Any]) -> struct_pb2.Struct:
    """The stack's model version serving on its endpoint (the endpoint held by the fakes)."""

    def program() -> Any:
        args = DeploymentArgs(
            project=PROJECT,
            region=REGION,
            endpoint=ENDPOINT,
            model=f"projects/{PROJECT}/locations/{REGION}/models/vertex-training-dev@1",
            machine_type="n1-standard-2",
            display_name="vertex-training-dev",
            **{"min_replica_count": 1, "max_replica_count": 2, "poll_interval_seconds": 0.05, **changes},
        )
        return Deployment("deployment", args).deployed_model_id

    return _one(program, DEPLOYMENT)


_PROGRAMS: dict[str, Callable[[Path, dict[str, Any]], struct_pb2.Struct]] = {
    # A job that gave up its primary shape (a stockout) and ran on the fallback: two attempts stored.
    "vertex_job_fallback": _job(_vertex_job(args=("--epochs", "2"), fallbacks=(FALLBACK,))),
    # Created with wait: false and still running when the state was written.
    "vertex_job_running": _job(_vertex_job(args=("--epochs", "3"), wait=False)),
    "local_job": _job(_local_job(WRITE_METRICS)),
    "local_job_running": _job(_local_job(SLEEP, wait=False)),
    "tuning_job": _study,
    "tuning_job_running": lambda base, changes: _study(
        base, {"display_name": "compat-live", "wait": False, **changes}
    ),
    "local_study": lambda base, changes: _study(base, changes, REPORT_METRIC),
    # Its study process (python -m infra.vertex.local_study, named in the stored job.json) ran a trial.
    "local_study_running": lambda base, changes: _study(base, {"wait": False, **changes}, SLEEP),
    "model_version": _model,
    "image_build": _image,
    "batch_job": _batch(False),
    # Created with wait: false and still running when the state was written.
    "batch_job_running": _batch(
        False, wait=False, display_name="compat-live", output_dir="gs://demo-bucket/predictions/2"
    ),
    # Ran here: the tiny model on real images, its records and predictions under output_dir.
    "local_batch_job": _batch(True),
    "deployment": _deployment,
}

# A live job's update must not wait for it (the fakes hold it running): only the poll interval changes.
SLOWER_POLL = {"poll_interval_seconds": 0.1}
BATCH_UPGRADED = ("artifact_uri", "serving_image")
NO_IMAGE = ("serving_image",)
CASES = (
    Case("vertex_job_fallback", CUSTOM_JOB),
    Case("vertex_job_running", CUSTOM_JOB, live=True, update=SLOWER_POLL),
    Case("local_job", CUSTOM_JOB, local=True),
    Case("local_job_running", CUSTOM_JOB, live=True, local=True, update=SLOWER_POLL),
    Case("tuning_job", TUNING_JOB),
    Case("tuning_job_running", TUNING_JOB, live=True, update=SLOWER_POLL),
    Case("local_study", TUNING_JOB, local=True),
    Case("local_study_running", TUNING_JOB, live=True, local=True, update=SLOWER_POLL),
    # Stored versions are served by Google's prebuilt 2.15 container, today's by the stack's own image.
    Case("model_version", MODEL_VERSION, update=None, upgraded=("serving_image",)),
    Case("image_build", IMAGE_BUILD, update=SLOWER_POLL),
    # Stored batch jobs read the model dir's serving_bytes/ export in Google's prebuilt container; today's
    # read the model dir itself in the stack's serving image.
    # On Vertex, today's Check requires serving_image: the stored program, which named none, is refused, and
    # today's replaces the job, so no in-place update ever reaches a stored one (update=None).
    Case("batch_job", BATCH_JOB, update=None, upgraded=BATCH_UPGRADED, refused_as_stored=NO_IMAGE),
    Case(
        "batch_job_running",
        BATCH_JOB,
        live=True,
        update=None,
        upgraded=BATCH_UPGRADED,
        refused_as_stored=NO_IMAGE,
    ),
    Case(
        "local_batch_job",
        BATCH_JOB,
        local=True,
        update=SLOWER_POLL,
        upgraded=BATCH_UPGRADED,
        records_in="predictions",
    ),
    # Recorded since af4e64b (the first with the stack's endpoint); its replica counts scale in place today.
    Case("deployment", DEPLOYMENT, update={"max_replica_count": 3}),
)


def to_json(struct: struct_pb2.Struct) -> dict[str, Any]:
    return json_format.MessageToDict(struct)


def to_struct(value: dict[str, Any]) -> struct_pb2.Struct:
    return json_format.ParseDict(value, struct_pb2.Struct())


def rewrite(value: Any, old: str, new: str) -> Any:
    """`value` (JSON-like) with every string's `old` replaced by `new`."""
    return json.loads(json.dumps(value).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))


def files_under(root: Path) -> Iterator[tuple[str, str]]:
    """(relative path, text) of every file under `root`, in a stable order."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        yield str(path.relative_to(root)), path.read_text(errors="replace")
