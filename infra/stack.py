"""build(cfg): compose the stack's components and return its outputs (tests run this under mocks)."""

from __future__ import annotations

import pulumi

from infra.cloudbuild.component import REQUIRED_APIS as CLOUD_BUILD_APIS
from infra.cloudbuild.component import CloudBuildImage
from infra.cloudbuild.context import archive_tag
from infra.components import image as trainer_image
from infra.components import propagation
from infra.components.apis import BASE_APIS, Apis
from infra.components.budget import Budget
from infra.components.identity import JobIdentity
from infra.components.killswitch import REQUIRED_APIS as KILL_SWITCH_APIS
from infra.components.killswitch import KillSwitch, KillSwitchArgs
from infra.components.registry import Registry, repository_id, repository_url
from infra.components.service_agents import EVENTARC, PUBSUB, ServiceAgents
from infra.components.storage import TrainingBucket
from infra.components.tensorboard import Tensorboard
from infra.config import StackConfig
from infra.config.reader import ConfigError, set_fix
from infra.config.trainer import entrypoint_conflict
from infra.labels import stack_labels
from infra.workloads.batch import predictions, predictions_output
from infra.workloads.gate import after_success
from infra.workloads.jobs import LOCAL_SERVICE_ACCOUNT, JobPlan, TrainingJobs, logs_url, plan
from infra.workloads.model import RegisteredModel, model_outputs
from infra.workloads.serving import OnlineEndpoint, serving_outputs


def required_apis(cfg: StackConfig) -> list[str]:
    """The APIs a cloud stack enables (and `python -m infra.preflight` checks), sorted."""
    cloud_build = cfg.image_builder == "cloudbuild"
    kill_switch = KILL_SWITCH_APIS if cfg.kill_switch else []
    return sorted({*BASE_APIS, *kill_switch, *(CLOUD_BUILD_APIS if cloud_build else [])})


def build(cfg: StackConfig) -> dict[str, pulumi.Input]:
    """Declare everything for `cfg`; the local runner declares only the two jobs."""
    labels = stack_labels(pulumi.get_project(), pulumi.get_stack())
    code = cfg.trainer.dir
    job = plan(
        cfg, data_code=trainer_image.data_code_hash(code), trainer_code=trainer_image.content_hash(code)
    )
    if warning := entrypoint_conflict(cfg.trainer):
        pulumi.log.warn(warning)
    if cfg.is_local:
        return _build_local(cfg, job, labels)
    if cfg.budget is None:  # load_config refuses a cloud stack without one (infra/config/budget.py)
        raise ConfigError(
            "billingAccount", "is required for a cloud stack", set_fix("billingAccount", "<ACCOUNT_ID>")
        )

    project = cfg.gcp_project
    cloud_build = cfg.image_builder == "cloudbuild"
    apis = Apis("apis", project, required_apis(cfg))
    # What comes after the APIs retries its first use while an API enabled by this `up` is still refused.
    first_use = propagation.api_hooks()
    after_apis = pulumi.ResourceOptions(depends_on=[apis], hooks=first_use)
    storage = TrainingBucket(
        "storage",
        project=project,
        bucket_name=cfg.bucket_name,
        region=cfg.region,
        labels=labels,
        force_destroy=cfg.force_destroy,
        protect=cfg.protect,
        opts=after_apis,
    )
    registry = Registry(
        "registry",
        project=project,
        region=cfg.region,
        repository_id=repository_id(cfg.stack),
        labels=labels,
        opts=after_apis,
    )
    image = (
        CloudBuildImage(
            "trainer-image",
            project=project,
            region=cfg.region,
            stack=cfg.stack,
            repository_id=repository_id(cfg.stack),
            repository=registry.repository.repository_id,
            bucket=storage.name,
            context=code,
            opts=pulumi.ResourceOptions(depends_on=[apis, registry, storage], hooks=first_use),
        )
        if cloud_build
        else trainer_image.TrainerImage(
            "trainer-image",
            repository_url=repository_url(project, cfg.region, repository_id(cfg.stack)),
            labels=labels,
            context=code,
            opts=pulumi.ResourceOptions(depends_on=[registry], hooks=first_use),
        )
    )
    identity = JobIdentity(
        "identity",
        project=project,
        stack=cfg.stack,
        bucket=storage.name,
        repository=registry.repository.repository_id,
        region=cfg.region,
        tensorboard=cfg.tensorboard,
        opts=after_apis,
    )
    budget = Budget(
        "budget", project=project, stack=cfg.stack, cfg=cfg.budget, labels=labels, opts=after_apis
    )
    tensorboard = (
        Tensorboard(
            "tensorboard",
            project=project,
            region=cfg.region,
            stack=cfg.stack,
            labels=labels,
            protect=cfg.protect,
            opts=after_apis,
        )
        if cfg.tensorboard
        else None
    )
    kill_switch = (
        KillSwitch(
            "kill-switch",
            KillSwitchArgs(
                project=project,
                region=cfg.region,
                pulumi_project=pulumi.get_project(),
                pulumi_stack=pulumi.get_stack(),
                bucket=storage.name,
                topic=budget.topic_id,
                labels=labels,
                threshold=cfg.kill_switch_threshold,
                docker_repository=registry.repository.id,
                regions=tuple(cfg.capacity.regions(cfg.region)),
            ),
            opts=pulumi.ResourceOptions(
                depends_on=[
                    apis,
                    *ServiceAgents("service-agents", project, [EVENTARC, PUBSUB], after_apis).ready,
                ],
                hooks=first_use,
            ),
        )
        if cfg.kill_switch
        else None
    )
    serving_image = _serving_image(cfg, image, registry, labels, after_apis) if serves(cfg) else None
    jobs = TrainingJobs(
        "jobs",
        cfg=cfg,
        job=job,
        labels=labels,
        train_image=image.ref,
        data_image=image.data_uri,
        image_sources=image.sources,
        service_account=identity.email,
        tensorboard=tensorboard.name if tensorboard else None,
        depends_on=[image.image, *identity.grants],
        opts=after_apis,
    )
    model = (
        RegisteredModel(
            "model",
            cfg=cfg,
            # A training job stopped by its cap leaves no SavedModel: register only after it succeeded.
            model_dir=after_success(jobs.train_job, "The model version", jobs.train_job.model_dir),
            serving_image=serving_image.ref if serving_image else "",
            reader=identity.email,
            labels=labels,
            opts=pulumi.ResourceOptions(depends_on=[jobs.train_job], hooks=first_use),
        )
        if cfg.model_registry.register
        else None
    )
    after = [model.version] if model else []
    serving_ref = serving_image.ref if serving_image else ""
    predict = predictions(
        cfg, job.root, jobs.train_job, serving_ref, identity.email, labels, after, after_apis
    )
    online = (
        OnlineEndpoint("serving", cfg=cfg, version=model.version, labels=labels, opts=after_apis)
        if model and cfg.endpoint
        else None
    )
    return {
        "bucket": storage.name,
        "bucket_url": storage.url,
        "image_ref": image.ref,
        "serving_image_ref": serving_ref,
        **_job_outputs(job, jobs),
        "logs_url": jobs.train_job.job_name.apply(lambda name: logs_url(name, project)),
        "tensorboard_url": tensorboard.url if tensorboard else "",
        "job_service_account": identity.email,
        "budget_topic": budget.topic_id,
        "kill_switch_function": kill_switch.function_name if kill_switch else "",
        **model_outputs(model),
        "predictions_dir": predictions_output(predict),
        **serving_outputs(online),
    }


def image_uris(cfg: StackConfig) -> dict[str, str]:
    """The stack's images by their content tags, as its builder tags them (`make plan` shows them offline;
    `up` pins each by digest); none for the local stack."""
    if cfg.is_local:
        return {}
    url = repository_url(cfg.gcp_project, cfg.region, repository_id(cfg.stack))
    tag = archive_tag if cfg.image_builder == "cloudbuild" else trainer_image.content_hash
    uris = {"trainer": f"{url}/{trainer_image.IMAGE_NAME}:{tag(cfg.trainer.dir)}"}
    if serves(cfg):
        uris["serving"] = f"{url}/{trainer_image.SERVING_IMAGE_NAME}:{tag(trainer_image.SERVING_DIR)}"
    return uris


def serves(cfg: StackConfig) -> bool:
    """Whether the stack runs the prediction server: a registered model version or a batch prediction."""
    return cfg.model_registry.register or cfg.batch_prediction is not None


def _serving_image(
    cfg: StackConfig,
    trainer: CloudBuildImage | trainer_image.TrainerImage,
    registry: Registry,
    labels: dict[str, str],
    after_apis: pulumi.ResourceOptions,
) -> CloudBuildImage | trainer_image.ServingImage:
    """serving/ built by the stack's image builder into its repository, as the trainer image is."""
    project = cfg.gcp_project
    if isinstance(trainer, CloudBuildImage):
        return CloudBuildImage(
            "serving-image",
            project=project,
            region=cfg.region,
            stack=cfg.stack,
            repository_id=repository_id(cfg.stack),
            repository=registry.repository.repository_id,
            bucket=trainer.source.bucket,
            context=trainer_image.SERVING_DIR,
            image_name=trainer_image.SERVING_IMAGE_NAME,
            data_tag=False,
            identity=trainer.identity,  # one builder account for both images
            opts=pulumi.ResourceOptions(depends_on=[trainer.identity], hooks=after_apis.hooks),
        )
    return trainer_image.ServingImage(
        "serving-image",
        repository_url=repository_url(project, cfg.region, repository_id(cfg.stack)),
        labels=labels,
        opts=pulumi.ResourceOptions(depends_on=[registry], hooks=after_apis.hooks),
    )


def _build_local(cfg: StackConfig, job: JobPlan, labels: dict[str, str]) -> dict[str, pulumi.Input]:
    """No cloud resources: both jobs run as local processes; the trainer hash stands in for an image."""
    jobs = TrainingJobs(
        "jobs",
        cfg=cfg,
        job=job,
        labels=labels,
        train_image=f"local:{trainer_image.content_hash(cfg.trainer.dir)}",
        data_image=f"local:data-{trainer_image.data_code_hash(cfg.trainer.dir)}",
        service_account=LOCAL_SERVICE_ACCOUNT,
        tensorboard=None,
        depends_on=[],
    )
    # The local batch job runs serving/ from this checkout; its tag stands in for the image (a server change
    # runs the batch again, as a new image would).
    serving = f"local:{trainer_image.serving_tag()}"
    predict = predictions(cfg, job.root, jobs.train_job, serving, "", labels, [])
    return {
        "bucket": "",
        "bucket_url": cfg.local_dir,
        "image_ref": f"local (the local runner runs {cfg.trainer.dir.name}/ from this checkout, no image)",
        "serving_image_ref": "local (the local batch job runs serving/ from this checkout, no image)",
        **_job_outputs(job, jobs),
        "logs_url": "",
        "tensorboard_url": f"tensorboard --logdir {job.train_output_dir}/logs",
        "job_service_account": "",
        "budget_topic": "",
        "kill_switch_function": "",
        **model_outputs(None),
        "predictions_dir": predictions_output(predict),
    }


def _job_outputs(job: JobPlan, jobs: TrainingJobs) -> dict[str, pulumi.Input]:
    """What every stack reports about its jobs (the data job's are empty with dataSource none)."""
    data_job = jobs.data_job
    return {
        "data_dir": job.data_dir,
        "data_job_name": data_job.job_name if data_job else "",
        "data_job_state": data_job.state if data_job else "",
        "train_job_name": jobs.train_job.job_name,
        "train_job_state": jobs.train_job.state,
        "model_uri": jobs.train_job.model_dir,
        "console_url": jobs.train_job.console_url,
        "data_console_url": data_job.console_url if data_job else "",
        "val_accuracy": jobs.train_job.metrics.apply(lambda m: (m or {}).get("val_accuracy")),
        "metrics": jobs.train_job.metrics,
        "train_duration_seconds": jobs.train_job.duration_seconds,
        "train_estimated_cost_usd": jobs.train_job.estimated_cost_usd,
        # Worst case at list prices (timeout_seconds, every replica); None where a price is unknown.
        "data_worst_case_usd": data_job.worst_case_usd if data_job else None,
        "train_worst_case_usd": jobs.train_job.worst_case_usd,
        "best_parameters": jobs.best_parameters,  # by hyperparameter config key, as `tuning` wrote them
        "best_metric": jobs.tuning_job.best_metric if jobs.tuning_job else None,
    }
