"""The two CustomJobs, data preparation (CPU) then training (GPU), with content-addressed inputs."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pulumi

from infra.components.dockerfile import dockerfile_text
from infra.components.options import children
from infra.components.storage import CHECKPOINT_PREFIX, TMP_PREFIX
from infra.components.trainer_workdir import local_workdir
from infra.config import StackConfig
from infra.config.trainer import DEFAULT_COMMAND, PROJECT_ROOT, default_args
from infra.vertex.custom_job.experiments import run_id
from infra.vertex.custom_job.resource import CustomJob, CustomJobArgs, WorkerPool
from infra.vertex.runners.local.runner import WORKDIR_ENV
from infra.workloads.best_parameters import config_values, trial_templates, with_best
from infra.workloads.gate import after_success
from infra.workloads.tuning import study_dir, tuning_job

LOCAL_SERVICE_ACCOUNT = "local"
# TensorFlow's C++ INFO and WARNING lines would drown the trainer's own in the live log (ERROR still shows).
QUIET_TF_CPP_LOG_LEVEL = "2"
# A local CPU job: ERROR too (measured with TF 2.21 on a machine without a driver: level 3 hides the cuInit
# error; CUDA_VISIBLE_DEVICES -1 or empty does not, it only keeps the job off a GPU it did not ask for).
LOCAL_CPU_TF_CPP_LOG_LEVEL = "3"
HIDDEN_GPUS = "-1"


def job_env(environ: Mapping[str, str] = os.environ, *, local_cpu: bool = False) -> dict[str, str]:
    """The jobs' environment: TensorFlow quiet unless TF_CPP_MIN_LOG_LEVEL is set where `pulumi up` runs.

    That override is an input like any other: a changed value runs the jobs again. Unbuffered output makes
    print() lines reach the log as they happen. `local_cpu`: a local job that asked for no accelerator sees no
    GPU (CUDA_VISIBLE_DEVICES, overridable the same way) and runs one level quieter, which hides the
    `failed call to cuInit` error TensorFlow logs on a machine without a CUDA driver.
    """
    quiet = LOCAL_CPU_TF_CPP_LOG_LEVEL if local_cpu else QUIET_TF_CPP_LOG_LEVEL
    env = {"TF_CPP_MIN_LOG_LEVEL": environ.get("TF_CPP_MIN_LOG_LEVEL", quiet), "PYTHONUNBUFFERED": "1"}
    if local_cpu:
        env["CUDA_VISIBLE_DEVICES"] = environ.get("CUDA_VISIBLE_DEVICES", HIDDEN_GPUS)
    return env


def code_env(trainer_dir: Path, runner: str, root: Path = PROJECT_ROOT) -> dict[str, str]:
    """A local job imports its trainer as the image does (/app/<dir name>): from the directory's parent; and
    runs from the directory the image's WORKDIR stands for, when that is not the program directory (`root`,
    the local runner's default: the built-in trainer's /app).

    Vertex jobs get nothing: the image's working directory holds the code.
    """
    if runner != "local":
        return {}
    env = {"PYTHONPATH": str(trainer_dir.parent)}
    workdir = local_workdir(trainer_dir, dockerfile_text(trainer_dir), root)
    if workdir != root:
        env[WORKDIR_ENV] = runner_workdir(workdir, root)
    return env


def runner_workdir(workdir: Path, root: Path) -> str:
    """`workdir` as the local runner takes it: relative to `root` (its working directory), so another clone
    of the project runs the same job; absolute when it lies outside `root`."""
    resolved, base = workdir.resolve(), root.resolve()
    return resolved.relative_to(base).as_posix() if resolved.is_relative_to(base) else str(workdir)


def with_workers(chief: WorkerPool, workers: int) -> list[WorkerPool]:
    """The chief's pool, then (if any) a pool of `workers` replicas of the same machine and command."""
    return [chief, *([WorkerPool(**{**chief.__dict__, "replica_count": workers})] if workers else [])]


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
    # dataSource none: no data job; the trainer's {data_dir} is dataDir as given ("" when unset).
    given_data_dir: str | None = None

    @property
    def prepares_data(self) -> bool:
        return self.given_data_dir is None

    @property
    def data_dir(self) -> str:
        return f"{self.root}/data/{self.data_hash}" if self.given_data_dir is None else self.given_data_dir

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
    """`data_code`/`trainer_code`: content hashes of what each job runs (see infra/components/image.py)."""
    root = cfg.output_root
    data = asdict(cfg.data)
    if data["dir"] is None:
        del data["dir"]  # keeps the paths of stacks written before dataDir existed
    del data["replicas"]  # any replica count writes the same shards (trainer/shard_plan.py): same data dir
    data_hash = fingerprint({"data": data, "code": data_code})
    train_inputs: dict[str, object] = {
        "data": data_hash,
        "hyperparameters": asdict(cfg.hyperparameters),
        "code": trainer_code,
        "machine": [cfg.machine_type, cfg.accelerator_type, cfg.accelerator_count, cfg.worker_count],
    }
    trainer = cfg.trainer
    if (trainer.command, trainer.args) != (
        DEFAULT_COMMAND,
        default_args(cfg.hyperparameters, trainer.checkpoint_minutes),
    ):
        # Another command line runs other code: it must not resume the built-in's checkpoints (and the
        # built-in's paths stay as they were before these keys existed).
        train_inputs["trainer"] = [list(trainer.command), list(trainer.args)]
    given = None if cfg.data.source != "none" else cfg.data.dir or ""
    return JobPlan(root=root, data_hash=data_hash, train_hash=fingerprint(train_inputs), given_data_dir=given)


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


def local_cores() -> int:
    """The cores `pulumi up` may use: a local job's replicas all run on this machine."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def data_worker_args(cfg: StackConfig, cores: int) -> list[str]:
    """Local data replicas share this machine's cores (each would take every one); Vertex replicas are
    machines of their own, and one replica keeps the trainer's default (every core): no argument then."""
    if not cfg.is_local or cfg.data.replicas == 1:
        return []
    return ["--workers", str(max(1, cores // cfg.data.replicas))]


def placeholder_values(cfg: StackConfig, job: JobPlan) -> dict[str, str]:
    """What trainerArgs' `{name}` placeholders stand for (infra/config/trainer.py PLACEHOLDERS)."""
    hyperparameters = {
        name: repr(value) if isinstance(value, float) else str(value)
        for name, value in asdict(cfg.hyperparameters).items()
        if value is not None
    }
    minutes = cfg.trainer.checkpoint_minutes
    return {
        "data_dir": job.data_dir,
        "bucket": job.root,
        "checkpoint_dir": job.checkpoint_dir,
        **hyperparameters,
        "image_size": str(cfg.data.image_size),
        **({"checkpoint_minutes": f"{minutes:g}"} if minutes is not None else {}),
    }


def expand_args(templates: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    return [template.format_map(values) for template in templates]


def train_args(cfg: StackConfig, job: JobPlan) -> list[str]:
    """trainerArgs with the stack's values filled in (the built-in's: every hyperparameter and its dirs)."""
    return expand_args(cfg.trainer.args, placeholder_values(cfg, job))


def best_training(cfg: StackConfig, job: JobPlan, best: dict[str, object]) -> tuple[list[str], str]:
    """Training args and run dir for the study's best parameters: a new best gives new args (the job is
    replaced) and a new run and checkpoint dir; the same best gives the same ones (no change)."""
    if cfg.tuning is None:  # only a stack with a study has a best trial
        raise ValueError(f"stack {cfg.stack} has no tuning study, so no best parameters")
    tuned = replace(cfg, hyperparameters=with_best(cfg.hyperparameters, cfg.tuning, best))
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
        image_sources: pulumi.Input[dict[str, Any]] | None = None,
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
            **cfg.cost.job_args(),
            "poll_interval_seconds": 5.0 if cfg.is_local else 30.0,
            # How both images were made (one build), for run.json; None (left out) without a record.
            "image_sources": image_sources,
        }
        # dataSource none: no data preparation; the trainer reads its own data.
        self.data_job = (
            CustomJob(
                "data-prep",
                CustomJobArgs(
                    display_name=f"vertex-training-{cfg.stack}-data-{job.data_hash[:8]}",
                    # Each replica converts its own slice of the source, chosen from CLUSTER_SPEC.
                    worker_pools=with_workers(
                        WorkerPool(
                            machine_type=cfg.data_machine_type,
                            image_uri=data_image,
                            command=["python", "-m", "trainer.create_tfrecords"],
                            args=[*data_args(cfg, job), *data_worker_args(cfg, local_cores())],
                            env=job_env(local_cpu=cfg.is_local),
                        ),
                        cfg.data.replicas - 1,
                    ),
                    base_output_dir=job.data_output_dir,
                    **common,
                ),
                opts=children(self, opts, depends_on=depends_on),
            )
            if job.prepares_data
            else None
        )
        chief = WorkerPool(
            machine_type=cfg.machine_type,
            image_uri=train_image,
            command=list(cfg.trainer.command),
            args=train_args(cfg, job),
            env={
                **job_env(local_cpu=cfg.is_local and not cfg.accelerator_type),
                **code_env(cfg.trainer.dir, cfg.runner),
            },
            accelerator_type=cfg.accelerator_type,
            accelerator_count=cfg.accelerator_count,
        )
        pools = with_workers(chief, cfg.worker_count)
        train_dir: pulumi.Input[str] = job.train_output_dir
        self.tuning_job = None
        self.best_parameters: pulumi.Input[dict] = {}
        if (tuning := cfg.tuning) is not None:
            self.tuning_job = tuning_job(
                tuning,
                f"vertex-training-{cfg.stack}-tune-{job.train_hash[:8]}",
                pools,
                expand_args(trial_templates(cfg.trainer.args, tuning), placeholder_values(cfg, job)),
                # trainWithBest only changes what the training job does with the result: not the study's dir.
                study_dir(
                    job.root,
                    fingerprint([job.train_hash, asdict(replace(tuning, train_with_best=False))]),
                ),
                # The training job's scheduling strategy and restart-all (below) apply to every trial; trials
                # read the data job's TFRecords too, so none run after it was capped.
                {
                    **common,
                    **cfg.capacity.job_args(cfg.spot),
                    "restart_on_worker_restart": bool(cfg.worker_count),
                    **self._after_data("The tuning study"),
                },
                children(self, opts, depends_on=[*([self.data_job] if self.data_job else []), *depends_on]),
            )
            self.best_parameters = self.tuning_job.best_parameters.apply(lambda b: config_values(tuning, b))
            depends_on = [self.tuning_job, *depends_on]
            if tuning.train_with_best:
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
                # One experiment per stack, one run per run directory (the same inputs, the same run). Not for
                # multi-worker jobs: experiment tracking "isn't available when you ... use distributed
                # training" (Vertex "Run training job with experiment tracking", read 2026-11-25).
                **(
                    {
                        "experiment": cfg.experiment,
                        "experiment_run": pulumi.Output.from_input(train_dir).apply(run_id),
                    }
                    if cfg.experiment and not cfg.worker_count
                    else {}
                ),
                # A data job stopped by its cap leaves partial TFRecords: train only after it succeeded.
                **self._after_data("The training job"),
                # Strategy, FLEX_START wait and fallback shapes (stack keys in infra/config/capacity.py).
                **{**common, **cfg.capacity.job_args(cfg.spot)},
            ),
            opts=children(self, opts, depends_on=[*([self.data_job] if self.data_job else []), *depends_on]),
        )
        self.register_outputs(
            {
                "data_job_name": self.data_job.job_name if self.data_job else "",
                "train_job_name": self.train_job.job_name,
                "model_dir": self.train_job.model_dir,
            }
        )

    def _after_data(self, dependent: str) -> dict[str, pulumi.Output[str]]:
        """`upstream_job` for a job that reads the data job's output (nothing with dataSource none)."""
        return {"upstream_job": after_success(self.data_job, dependent)} if self.data_job else {}
