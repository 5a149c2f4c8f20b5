"""The batch prediction after training: the trained model classifies the stack's `batchPrediction.images`,
into `<output root>/predictions/<hash>` (a new directory for every model and image set)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

import pulumi

from infra.components.options import children
from infra.config import StackConfig
from infra.vertex.batch.resource import BatchPrediction, BatchPredictionArgs
from infra.vertex.custom_job.resource import CustomJob
from infra.workloads.gate import after_success


def predictions_dir(root: str, model_dir: str, cfg: StackConfig) -> str:
    assert cfg.batch_prediction is not None
    inputs = json.dumps([model_dir, asdict(cfg.batch_prediction)], sort_keys=True, default=str)
    return f"{root}/predictions/{hashlib.sha256(inputs.encode()).hexdigest()[:16]}"


class Predictions(pulumi.ComponentResource):
    """The BatchPrediction of `cfg.batch_prediction` on the training job's model, once it succeeded (and
    after `after`: the registered model version, when the stack registers one)."""

    def __init__(
        self,
        name: str,
        cfg: StackConfig,
        root: str,
        train_job: CustomJob,
        serving_image: pulumi.Input[str],
        service_account: pulumi.Input[str],
        labels: dict[str, str],
        after: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:stack:Predictions", name, None, opts)
        assert cfg.batch_prediction is not None
        model_dir = after_success(train_job, "The batch prediction", train_job.model_dir)
        output_dir = model_dir.apply(lambda d: predictions_dir(root, d, cfg))
        self.job = BatchPrediction(
            "predict",
            BatchPredictionArgs(
                project=cfg.gcp_project,
                region=cfg.region,
                display_name=output_dir.apply(lambda d: f"vertex-training-{cfg.stack}-predict-{d[-8:]}"),
                # The trainer's model dir itself, served by the stack's serving image (serving/).
                artifact_uri=model_dir,
                serving_image=serving_image,
                output_dir=output_dir,
                service_account=service_account,
                labels=labels,
                queue_timeout_seconds=cfg.queue_timeout_seconds,
                **cfg.cost.job_args(),
                runner=cfg.runner,
                poll_interval_seconds=5.0 if cfg.is_local else 30.0,
                **cfg.batch_prediction.job_args(),
            ),
            opts=children(self, opts, depends_on=[train_job, *after]),
        )
        self.register_outputs({"predictions_dir": self.job.predictions_dir})


def predictions(cfg: StackConfig, *args: Any, **kwargs: Any) -> Predictions | None:
    """The stack's batch prediction (Predictions' arguments after the name), or None without the
    batchPrediction key."""
    return Predictions("predictions", cfg, *args, **kwargs) if cfg.batch_prediction else None


def predictions_output(predictions: Predictions | None) -> pulumi.Input[str]:
    """The stack output `predictions_dir` ("" without batchPrediction)."""
    return predictions.job.predictions_dir if predictions else ""
