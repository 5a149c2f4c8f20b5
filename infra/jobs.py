"""The two CustomJobs, data preparation (CPU) then training (GPU), with content-addressed inputs."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from urllib.parse import quote

import pulumi

from infra.best_parameters import with_best
from infra.config import StackConfig
from infra.options import children
from infra.storage import CHECKPOINT_PREFIX, TMP_PREFIX
from infra.tuning_job import study_dir, tuning_job
from infra.vertex.resource import CustomJob, CustomJobArgs, WorkerPool

LOCAL_SERVICE_ACCOUNT = "local"
# TensorFlow's C++ INFO and WARNING lines would drown the trainer's own in the live log (ERROR still shows).
QUIET_TF_CPP_LOG_LEVEL = "2"


def job_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The jobs' environment: TensorFlow quiet unless TF_CPP_MIN_LOG_LEVEL is set where `pulumi up` runs.

    That override is an input like any other: a changed value runs the jobs again. Unbuffered output makes
    print() lines reach the log as they happen.
    """
    level = environ.get("TF_CPP_MIN_LOG_LEVEL", QUIET_TF_CPP_LOG_LEVEL)
    return {"TF_CPP_MIN_LOG_LEVEL": level, "PYTHONUNBUFFERED": "1"}


def fingerprint(value: object) -> str:
    """Short stable hash of a JSON-able value: the same settings always give the same paths."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class JobPlan:
    """Everything the jobs compute from, as plain values: paths move exactly when their inputs do."""

    root: str
    data_hash: str
    train_hash: str

    @property
    def data_dir(self) -> str:
        return f"{self.root}/data/{self.data_hash}"

    @property
    def data_output_dir(self) -> str:
        # The data job writes nothing under its output dir; keep it with other throwaway data.
        return f"{self.root}/{TMP_PREFIX}data-prep/{self.data_hash}"

    @property
    def train_output_dir(self) -> str:
        return f"{self.root}/runs/{self.train_hash}"

    @property
    def checkpoint_dir(self) -> str:
        # Under checkpoints/ (not the run dir) so the lifecycle rule can expire them; one dir per input set,
        # so a changed job never resumes another job's checkpoints.
        return f"{self.root}/{CHECKPOINT_PREFIX}{self.train_hash}"


def plan(cfg: StackConfig, data_code: str, trainer_code: str) -> JobPlan:
    """`data_code`/`trainer_code`: content hashes of what each job runs (see infra/image.py)."""
    root = cfg.local_dir if cfg.is_local else f"gs://{cfg.bucket_name}"
    data_hash = fingerprint({"data": asdict(cfg.data), "code": data_code})
    train_hash = fingerprint(
        {
            "data": data_hash,
            "hyperparameters": asdict(cfg.hyperparameters),
            "code": trainer_code,
            "machine": [cfg.machine_type, cfg.accelerator_type, cfg.accelerator_count, cfg.worker_count],
        }
    )
    return JobPlan(root=root, data_hash=data_hash, train_hash=train_hash)


def data_args(cfg: StackConfig, job: JobPlan) -> list[str]:
    data = cfg.data
    args = ["--source", data.source]
    if data.folder:
        args += ["--folder", data.folder]
    if data.tfds_name:
        args += ["--tfds-name", data.tfds_name]
    if data.count is not None:
        args += ["--count", str(data.count)]
    return [*args, "--output", job.data_dir, "--image-size", str(data.image_size), "--seed", str(data.seed)]


def train_args(cfg: StackConfig, job: JobPlan) -> list[str]:
    """Model and TensorBoard dirs come from AIP_MODEL_DIR / AIP_TENSORBOARD_LOG_DIR under the run dir."""
    hp = cfg.hyperparameters
    return [
        "--data-dir", job.data_dir,
        "--checkpoint-dir", job.checkpoint_dir,
        "--image-size", str(cfg.data.image_size),
        "--epochs", str(hp.epochs),
        "--fine-tune-epochs", str(hp.fine_tune_epochs),
        "--batch-size", str(hp.batch_size),
        "--learning-rate", repr(hp.learning_rate),
        "--weights", hp.weights,
        "--mixed-precision", hp.mixed_precision,
        "--backbone", hp.backbone,
        *(["--num-classes", str(hp.num_classes)] if hp.num_classes else []),
    ]  # fmt: skip


def best_training(cfg: StackConfig, job: JobPlan, best: dict[str, object]) -> tuple[list[str], str]:
    """Training args and run dir for the study's best parameters: a new best gives new args (the job is
    replaced) and a new run and checkpoint dir; the same best gives the same ones (no change)."""
    tuned = replace(cfg, hyperparameters=with_best(cfg.hyperparameters, best))
    tuned_job = replace(job, train_hash=fingerprint([job.train_hash, asdict(tuned.hyperparameters)]))
    return train_args(tuned, tuned_job), tuned_job.train_output_dir


def logs_url(job_name: str | None, project: str) -> str:
    """Cloud Logging query for one Vertex job (empty for local jobs, whose logs are files)."""
    if not job_name or not job_name.startswith("projects/"):
        return ""
    query = f'resource.type="ml_job"\nresource.labels.job_id="{job_name.rsplit("/", 1)[-1]}"'
    return f"https://console.cloud.google.com/logs/query;query={quote(query, safe='')}?project={project}"


class TrainingJobs(pulumi.ComponentResource):
    """Data preparation, then training; both wait for the job to finish so `pulumi up` ends with a model."""

    def __init__(
        self,
        name: str,
        *,
        cfg: StackConfig,
        job: JobPlan,
        labels: dict[str, str],
        train_image: pulumi.Input[str],
        data_image: pulumi.Input[str],
        service_account: pulumi.Input[str],
        tensorboard: pulumi.Input[str] | None,
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:stack:TrainingJobs", name, None, opts)
        common = {
            "project": cfg.gcp_project,
            "region": cfg.region,
            "service_account": service_account,
            "labels": labels,
            "timeout_seconds": cfg.timeout_seconds,
            "queue_timeout_seconds": cfg.queue_timeout_seconds,
            "spot": cfg.spot,
            "runner": cfg.runner,
            "poll_interval_seconds": 5.0 if cfg.is_local else 30.0,
        }
        self.data_job = CustomJob(
            "data-prep",
            CustomJobArgs(
                display_name=f"vertex-training-{cfg.stack}-data-{job.data_hash[:8]}",
                worker_pools=[
                    WorkerPool(
                        machine_type=cfg.data_machine_type,
                        image_uri=data_image,
                        command=["python", "-m", "trainer.create_tfrecords"],
                        args=data_args(cfg, job),
                        env=job_env(),
                    )
                ],
                base_output_dir=job.data_output_dir,
                **common,
            ),
            opts=children(self, opts, depends_on=depends_on),
        )
        chief = WorkerPool(
            machine_type=cfg.machine_type,
            image_uri=train_image,
            command=["python", "-m", "trainer.task"],
            args=train_args(cfg, job),
            env=job_env(),
            accelerator_type=cfg.accelerator_type,
            accelerator_count=cfg.accelerator_count,
        )
        pools = [chief]
        if cfg.worker_count:
            pools.append(WorkerPool(**{**chief.__dict__, "replica_count": cfg.worker_count}))
        train_dir: pulumi.Input[str] = job.train_output_dir
        self.tuning_job = None
        if cfg.tuning:
            self.tuning_job = tuning_job(
                cfg.tuning,
                f"vertex-training-{cfg.stack}-tune-{job.train_hash[:8]}",
                pools,
                # trainWithBest only changes what the training job does with the result: not the study's dir.
                study_dir(
                    job.root,
                    fingerprint([job.train_hash, asdict(replace(cfg.tuning, train_with_best=False))]),
                ),
                common,
                children(self, opts, depends_on=[self.data_job, *depends_on]),
            )
            depends_on = [self.tuning_job, *depends_on]
            if cfg.tuning.train_with_best:
                best = self.tuning_job.best_parameters.apply(lambda b: best_training(cfg, job, b))
                train_dir = best.apply(lambda b: b[1])
                pools = [replace(pool, args=best.apply(lambda b: b[0])) for pool in pools]
        self.train_job = CustomJob(
            "train",
            CustomJobArgs(
                display_name=f"vertex-training-{cfg.stack}-train-{job.train_hash[:8]}",
                worker_pools=pools,
                base_output_dir=train_dir,
                # MultiWorkerMirroredStrategy cannot lose a worker mid-step: restart them all together.
                restart_on_worker_restart=bool(cfg.worker_count),
                tensorboard=tensorboard,
                **common,
            ),
            opts=children(self, opts, depends_on=[self.data_job, *depends_on]),
        )
        self.register_outputs(
            {
                "data_job_name": self.data_job.job_name,
                "train_job_name": self.train_job.job_name,
                "model_dir": self.train_job.model_dir,
            }
        )
