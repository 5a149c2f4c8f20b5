"""CLI: fine-tune an ImageNet backbone on the TFRecords (frozen-backbone head, then the top block), export.

Reads top to bottom: arguments -> data -> strategy and model -> one fit per phase (resumable) -> export.
"""

from __future__ import annotations

import argparse
import logging
import os
import posixpath
import sys
import time
from dataclasses import dataclass

import tensorflow as tf
import tf_keras as keras

from trainer import (
    backbones,
    checkpoints,
    data,
    distribute,
    export,
    hypertune,
    metadata,
    model,
    phases,
    run_identity,
    startup,
)
from trainer.errors import TrainerError
from trainer.outputs import write_dir
from trainer.throughput import StepClock, ThroughputMeter, input_bound_message

log = logging.getLogger("trainer.task")
FINE_TUNE_LR_FACTOR = 0.1
MIN_IMAGE_SIZE = 32  # what create_tfrecords stores at the least (the backbones' smallest input)


@dataclass(frozen=True)
class Phase:
    name: str
    first_epoch: int  # epochs are numbered across phases, so TensorBoard's axis is continuous
    last_epoch: int  # exclusive


def whole_number(text: str) -> int:
    """An integer flag; "16.0" too, as a tuning study may pass a DISCRETE value (a double)."""
    number = float(text)
    if not number.is_integer():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(number)


def parse_args(argv: list[str] | None = None, env: dict[str, str] | None = None) -> argparse.Namespace:
    env = dict(os.environ) if env is None else env
    p = argparse.ArgumentParser(prog="python -m trainer.task", description=__doc__)
    p.add_argument("--data-dir", required=True, help="TFRecords + metadata.json (local or gs://)")
    p.add_argument(
        "--model-dir",
        default=env.get("AIP_MODEL_DIR"),
        help="SavedModel + metrics.json (default $AIP_MODEL_DIR)",
    )
    p.add_argument(
        "--checkpoint-dir",
        default=env.get("AIP_CHECKPOINT_DIR"),
        help="resume state (default $AIP_CHECKPOINT_DIR, else <model-dir>/../checkpoints)",
    )
    p.add_argument(
        "--tensorboard-dir",
        default=env.get("AIP_TENSORBOARD_LOG_DIR"),
        help="TensorBoard logs (default $AIP_TENSORBOARD_LOG_DIR, else <model-dir>/../logs)",
    )
    p.add_argument(
        "--epochs", type=whole_number, default=5, help="epochs training the head on a frozen backbone"
    )
    p.add_argument(
        "--fine-tune-epochs",
        type=whole_number,
        default=5,
        help="epochs fine-tuning the backbone's top block",
    )
    p.add_argument(
        "--batch-size", type=whole_number, default=32, help="per replica; global = this x replicas"
    )
    p.add_argument("--image-size", type=int, help="must equal the data's image size (default: the data's)")
    p.add_argument("--num-classes", type=int, help="must equal the data's class count (default: the data's)")
    p.add_argument("--backbone", choices=list(backbones.BACKBONES), default=backbones.DEFAULT)
    p.add_argument("--weights", choices=["imagenet", "none"], default="imagenet")
    p.add_argument("--mixed-precision", choices=["auto", "on", "off"], default="auto")
    p.add_argument(
        "--learning-rate", type=float, default=1e-3, help="per replica; scaled by the replica count"
    )
    p.add_argument(
        "--checkpoint-minutes",
        type=float,
        default=checkpoints.DEFAULT_MINUTES,
        help="back up at least this often (and at each epoch's end); a restart repeats at most this much",
    )
    args = p.parse_args(argv)
    if not args.model_dir:
        p.error("--model-dir is required when AIP_MODEL_DIR is not set")
    parent = posixpath.dirname(args.model_dir.rstrip("/"))
    args.checkpoint_dir = args.checkpoint_dir or posixpath.join(parent, "checkpoints")
    args.tensorboard_dir = args.tensorboard_dir or posixpath.join(parent, "logs")
    if args.epochs < 1 or args.fine_tune_epochs < 0:
        p.error("--epochs must be at least 1 and --fine-tune-epochs at least 0")
    if args.batch_size < 1 or args.learning_rate <= 0:
        p.error("--batch-size and --learning-rate must be positive")
    if args.image_size is not None and args.image_size < MIN_IMAGE_SIZE:
        p.error(
            f"--image-size {args.image_size} is too small; the backbones need at least {MIN_IMAGE_SIZE} "
            "(omit it to train at the data's own size)"
        )
    if not args.checkpoint_minutes > 0:
        p.error(f"--checkpoint-minutes {args.checkpoint_minutes:g} must be positive, e.g. 10")
    return args


def run_logs(tensorboard_dir: str, checkpoint_dir: str) -> str:
    """Each run's TensorBoard logs in a folder named as its checkpoints' (run-<hash>): runs trained into the
    same dirs stay apart, and `tensorboard --logdir <tensorboard dir>` shows each as a run of its own."""
    return posixpath.join(tensorboard_dir, posixpath.basename(checkpoint_dir.rstrip("/")))


def check_data(
    meta: metadata.Metadata, data_dir: str, image_size: int | None, num_classes: int | None = None
) -> int:
    """The training image size: the data's own; a different --image-size or --num-classes is an error."""
    if image_size is not None and image_size != meta.image_size:
        raise TrainerError(
            f"--image-size {image_size} contradicts {data_dir}/metadata.json (image_size {meta.image_size}). "
            f"Pass --image-size {meta.image_size} (or omit it), or convert the data again with the "
            f"create_tfrecords command that made it and --image-size {image_size}."
        )
    classes = len(meta.class_names)
    if classes < 2:
        raise TrainerError(
            f"{data_dir} has {classes} class(es) {meta.class_names}; a classifier needs at least two: "
            "prepare data with one sub-folder per class"
        )
    if num_classes is not None and num_classes != classes:
        raise TrainerError(
            f"--num-classes {num_classes} contradicts {data_dir}/metadata.json ({classes} classes: "
            f"{meta.class_names}). Pass --num-classes {classes} (or omit it), or point --data-dir at the "
            "data set you meant."
        )
    return meta.image_size


def plan_line(args: argparse.Namespace, top_block: tuple[str, ...], fine_tune_default: bool) -> str:
    """What the run will do, said first: its phases, their epochs and what each trains."""
    total = args.epochs + args.fine_tune_epochs
    default = " (the default --fine-tune-epochs)" if fine_tune_default and args.fine_tune_epochs else ""
    tuned = (
        f"then {args.fine_tune_epochs} fine-tune epoch(s){default} at a tenth of the learning rate"
        if args.fine_tune_epochs
        else "no fine-tune epochs"
    )
    if args.weights == "none":
        return (
            f"plan: {total} epochs: no pretrained weights (--weights none), so every layer trains from "
            f"scratch: {args.epochs} head epoch(s) (the whole network, not a frozen backbone), {tuned} "
            "(the whole network still)"
        )
    head = f"plan: {total} epochs: {args.epochs} head epoch(s) on the frozen {args.weights} backbone, {tuned}"
    blocks = "/".join(top_block)
    return (
        f"{head} with its top block ({blocks}*, BatchNorm frozen) unfrozen" if args.fine_tune_epochs else head
    )


def start_fine_tune(net: keras.Model, weights: str, top_block: tuple[str, ...]) -> int | None:
    """The fine-tune phase's layers: with pretrained weights, the backbone's top block (BatchNorm frozen);
    how many. Without (None): nothing was frozen, and narrowing training to the top block would freeze most
    of a network that has only just started to learn, so the whole network goes on at the lower rate."""
    if weights == "none":
        log.info("fine-tuning the whole network (no pretrained weights) at a tenth of the learning rate")
        return None
    tuned = model.unfreeze_top(net, top_block)
    log.info("fine-tuning %d backbone layers (BatchNorm frozen)", tuned)
    return tuned


def plan_phases(epochs: int, fine_tune_epochs: int) -> list[Phase]:
    plan = [Phase("head", 0, epochs)]
    if fine_tune_epochs:
        plan.append(Phase("fine_tune", epochs, epochs + fine_tune_epochs))
    return plan


class EpochLog(keras.callbacks.Callback):
    """One line per epoch; says so when BackupAndRestore resumed the phase past its first epoch."""

    def __init__(self, phase: Phase, role: distribute.Role, meter: ThroughputMeter | None = None):
        super().__init__()
        self.phase, self.role, self.started, self.first, self.meter = phase, role, 0.0, True, meter

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self.first and epoch > self.phase.first_epoch:
            log.info(
                "%s: resumed %s from checkpoint at epoch %d/%d",
                self._who(),
                self.phase.name,
                epoch + 1,
                self.phase.last_epoch,
            )
        self.first, self.started = False, time.monotonic()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        values = " ".join(f"{k}={v:.4f}" for k, v in sorted((logs or {}).items()))
        figures = self.meter.last if self.meter else None
        speed = (
            f", {figures.images_per_second:.1f} images/s, input wait {figures.input_wait_fraction:.0%}"
            if figures
            else f", {self.meter.not_measured()}"
            if self.meter
            else ""
        )
        log.info(
            "%s: %s epoch %d/%d %s (%.1fs%s)",
            self._who(),
            self.phase.name,
            epoch + 1,
            self.phase.last_epoch,
            values,
            time.monotonic() - self.started,
            speed,
        )
        if figures and figures.input_bound:
            log.warning("%s: %s", self._who(), input_bound_message(self.phase.name, epoch + 1, figures))

    def _who(self) -> str:
        return f"{self.role.task_type}-{self.role.task_id}"


def phase_callbacks(
    phase: Phase,
    checkpoint_dir: str,
    tensorboard_dir: str,
    role: distribute.Role,
    backup: checkpoints.Backups | None = None,
    meter: ThroughputMeter | None = None,
) -> list[keras.callbacks.Callback]:
    """Callbacks run in list order: the order is what makes resume safe."""
    backup = backup or checkpoints.Backups(checkpoints.DEFAULT_MINUTES)
    return [
        # First: the phase's weights and DONE exist before BackupAndRestore deletes its backup at train end.
        phases.MarkDone(checkpoint_dir, phase.name, role),
        backup.callback(phases.backup_dir(checkpoint_dir, phase.name)),
        keras.callbacks.TensorBoard(tensorboard_dir),
        *([meter] if meter else []),  # after the others: it times the steps, not the callbacks
        EpochLog(phase, role, meter),  # after the backup: a logged epoch is a checkpointed epoch
    ]


def train(args: argparse.Namespace) -> dict:
    meta = metadata.read(args.data_dir)
    size = check_data(meta, args.data_dir, args.image_size, args.num_classes)
    num_classes, backbone = len(meta.class_names), backbones.get(args.backbone)
    tf_config = os.environ.get("TF_CONFIG")
    role = distribute.role(tf_config)
    kind = distribute.strategy_kind(tf_config, len(tf.config.list_physical_devices("GPU")))
    strategy = distribute.make_strategy(kind)  # first: MultiWorkerMirroredStrategy must precede other TF ops
    mixed = distribute.use_mixed_precision(args.mixed_precision, distribute.gpu_compute_capabilities())
    keras.mixed_precision.set_global_policy("mixed_float16" if mixed else "float32")

    replicas = strategy.num_replicas_in_sync
    workers = max(distribute.training_task_count(distribute.parse_tf_config(tf_config)), 1)
    global_batch = args.batch_size * replicas
    steps = meta.total("train") // global_batch
    if steps == 0:
        raise TrainerError(
            f"{meta.total('train')} training images cannot fill one global batch of {global_batch} "
            f"({args.batch_size} x {replicas} replicas); lower --batch-size or add images"
        )
    learning_rate = args.learning_rate * replicas
    log.info(
        "%s-%d: %s, %d classes, strategy %s, %d replica(s), global batch %d, lr %g, mixed precision %s, "
        "image size %d, %d train / %d valid images",
        role.task_type,
        role.task_id,
        backbone.name,
        num_classes,
        kind,
        replicas,
        global_batch,
        learning_rate,
        mixed,
        size,
        meta.total("train"),
        meta.total("valid"),
    )

    train_ds = data.train_dataset(args.data_dir, size, global_batch, workers)
    valid_ds = data.valid_dataset(args.data_dir, size, global_batch, workers)
    with strategy.scope():
        net = model.build(size, None if args.weights == "none" else "imagenet", num_classes, backbone.name)

    # Each run resumes only itself: its checkpoints live in a folder named by its settings.
    settings = run_identity.settings_for(args, meta)
    checkpoint_dir, others = run_identity.start(args.checkpoint_dir, settings, role)
    if others:
        log.info("%s-%d: %s", role.task_type, role.task_id, others)
    if role.is_chief and tf.io.gfile.exists(posixpath.join(args.model_dir, "saved_model.pb")):
        log.info(
            "%s-%d: --model-dir %s holds a model already: this run replaces it when it exports (copy it "
            "elsewhere first to keep it); TensorBoard logs stay apart, this run's in %s",
            role.task_type,
            role.task_id,
            args.model_dir,
            run_logs(args.tensorboard_dir, checkpoint_dir),
        )
    throughput: dict[str, dict] = {}
    clock = StepClock(local_replicas=max(replicas // workers, 1))
    backup = checkpoints.Backups(
        args.checkpoint_minutes,
        checkpoints.agreement(strategy, workers),
        who=f"{role.task_type}-{role.task_id}",
    )
    backup.notice.install()  # SIGTERM: a Spot VM's preemption notice (trainer/checkpoints.py)
    reporter = hypertune.from_env() if role.is_chief else None
    plan = plan_phases(args.epochs, args.fine_tune_epochs)
    done = [p.name for p in plan if phases.is_done(checkpoint_dir, p.name)]
    # Phases finished by an earlier process of this run: their weights, and their history for metrics.json.
    history: dict[str, dict] = {name: phases.load_history(checkpoint_dir, name) for name in done}
    if done:
        phases.load_done(net, checkpoint_dir, done[-1])
        log.info(
            "%s-%d: phases %s of this run already finished (%s); loaded their weights",
            role.task_type,
            role.task_id,
            done,
            checkpoint_dir,
        )
    with write_dir(run_logs(args.tensorboard_dir, checkpoint_dir), role) as tensorboard_dir:
        for phase in plan:
            if phase.name in done:
                continue
            with strategy.scope():
                if phase.name == "fine_tune":
                    start_fine_tune(net, args.weights, backbone.top_block)
                lr = learning_rate * (FINE_TUNE_LR_FACTOR if phase.name == "fine_tune" else 1)
                model.compile_for(net, lr, num_classes)
            meter = ThroughputMeter(clock, global_batch)
            with clock.timing(net):
                fit = net.fit(
                    train_ds,
                    validation_data=valid_ds,
                    initial_epoch=phase.first_epoch,
                    epochs=phase.last_epoch,
                    steps_per_epoch=steps,
                    verbose=0,
                    callbacks=[
                        *phase_callbacks(phase, checkpoint_dir, tensorboard_dir, role, backup, meter),
                        *([hypertune.ReportMetric(reporter)] if reporter else []),
                    ],
                )
            history[phase.name] = {k: [float(v) for v in vs] for k, vs in fit.history.items()}
            throughput[phase.name] = meter.as_json()
            log.info("%s-%d: %s finished; weights saved", role.task_type, role.task_id, phase.name)

    # No earlier run's metrics.json stays beside this run's model, even if this run ends before its own.
    export.discard_metrics(args.model_dir, role)
    export.export(net, args.model_dir, size, role, meta.class_names)
    if not role.is_chief:
        log.info("%s-%d: done (outputs are the chief's)", role.task_type, role.task_id)
        return {}
    log.info("SavedModel written to %s; evaluating it on the validation split", args.model_dir)
    # Reported metrics are those of the exported SavedModel on the whole validation split.
    probs, labels = export.predict_saved_model(args.model_dir, data.valid_dataset(args.data_dir, size, 64))
    metrics = export.classification_metrics(probs, labels, meta.class_names) | {
        "valid_images": len(labels),
        "image_size": size,
        "class_names": meta.class_names,
        "backbone": backbone.name,
        "strategy": kind,
        "replicas": replicas,
        "global_batch_size": global_batch,
        "mixed_precision": mixed,
        "history": history,
        "run_id": settings.run_id(),
        "throughput": throughput,
    }
    export.write_metrics(args.model_dir, metrics)
    if reporter and isinstance(metrics.get(reporter.tag), float):
        # The last report is the study's final measurement: make it the exported model's, as in metrics.json.
        reporter.report(metrics[reporter.tag], args.epochs + args.fine_tune_epochs)
    log.info(
        "exported %s: val_accuracy=%.4f val_loss=%.4f",
        args.model_dir,
        metrics["val_accuracy"],
        metrics["val_loss"],
    )
    return metrics


def main(argv: list[str] | None = None) -> None:
    startup.quiet_start()
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr
    )
    logging.getLogger("trainer").setLevel(logging.INFO)
    args = parse_args(argv)
    given = argv if argv is not None else sys.argv[1:]
    fine_tune_default = not any(a.split("=")[0] == "--fine-tune-epochs" for a in given)
    log.info("%s", plan_line(args, backbones.get(args.backbone).top_block, fine_tune_default))
    try:
        train(args)
    except TrainerError as exc:
        sys.exit(f"error: {exc}")
    except checkpoints.Preempted as exc:
        log.warning("%s", exc)
        sys.exit(checkpoints.PREEMPTED_EXIT_STATUS)
    except KeyboardInterrupt:
        sys.exit(
            f"interrupted: training stopped; kept {args.checkpoint_dir} (a backup at each epoch's end and "
            f"every {args.checkpoint_minutes:g} min: the same command resumes from the last one) and "
            f"{args.tensorboard_dir}"
        )


if __name__ == "__main__":
    main()
