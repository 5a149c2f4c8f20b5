"""`make train-local`, `tune-local`, `predict-local` and `serve-local`: the built-in trainer as a training
job and as a study, a batch prediction and the prediction server on this machine, through the
resources' own providers and local runners, so each run ends with the same run.json a stack's run has, in a
folder of its own that `make runs` lists.

    python -m infra.local_runs train --run-dir DIR -- TRAINER_ARGS...   # one training job
    python -m infra.local_runs tune --run-dir DIR [--count 96] [--image-size 32]   # a 4-trial grid study
    python -m infra.local_runs batch --images DIR [--model-dir DIR]   # a batch prediction of a folder
    python -m infra.local_runs serve [--model-dir DIR] [--port 8080]   # the prediction server

A run's folder goes under the local stack's output root (`runs/` for jobs, `tuning/` for studies: what
infra/runs.py reads), which is where the Makefile puts it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from infra.config.trainer import DEFAULT_COMMAND
from infra.labels import stack_labels
from infra.vertex.custom_job.resource import CustomJobArgs, WorkerPool, to_props
from infra.vertex.lifecycle import run_record
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.provider import CustomJobProvider
from infra.vertex.runners.local.runner import LOCAL_PREFIX, LOCAL_RECORDS, LocalRunner
from infra.vertex.serving_container import unservable
from infra.vertex.tuning.resource import Parameter, StudyArgs, tuning_props
from infra.vertex.tuning_provider import TuningJobProvider
from serving import settings as serving_settings
from serving.client import request_body

# Shape fields the providers validate; the local runner ignores them (Pulumi.local.yaml says the same).
MACHINE_TYPE = "n1-standard-4"
TIMEOUT_SECONDS = 3600
# The stack whose localDir holds these runs (Pulumi.local.yaml; the Makefile's LOCAL_ROOT), in Pulumi.yaml's
# project: its leftovers and runs list them.
PULUMI_PROJECT = "vertex-training"
LOCAL_STACK = "local"
CANCEL_WAIT_SECONDS = 120.0  # the supervisor gives replicas 10 s after SIGTERM; the trainer backs up first
POLL_SECONDS = 0.5
PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The trainer's environment in every local run: unbuffered lines, so they reach the terminal as they come.
TRAINER_ENV = {"PYTHONUNBUFFERED": "1"}


def trainer_pool(args: Sequence[str], env: dict[str, str] | None = None) -> WorkerPool:
    """The built-in trainer as a job's only pool, run by this machine's Python."""
    return WorkerPool(
        machine_type=MACHINE_TYPE,
        image_uri="local",
        command=list(DEFAULT_COMMAND),
        args=list(args),
        env={**TRAINER_ENV, **(env or {})},
    )


def job_args(name: str, run_dir: Path, pool: WorkerPool) -> CustomJobArgs:
    """A local job writing under `run_dir` (its AIP_MODEL_DIR is `run_dir`/model)."""
    return CustomJobArgs(
        project="local",
        region="us-central1",
        display_name=name,
        worker_pools=[pool],
        service_account="local",
        base_output_dir=str(run_dir),
        # The local stack's labels: `make leftovers STACK=local` finds a live run by them.
        labels={"run": name, **stack_labels(PULUMI_PROJECT, LOCAL_STACK)},
        timeout_seconds=TIMEOUT_SECONDS,
        poll_interval_seconds=1.0,
        runner="local",
    )


def checked(provider: Any, props: dict[str, Any]) -> dict[str, Any]:
    """The provider's own check of the props; its failures end the command, one line each."""
    result = provider.check({}, props)
    if result.failures:
        sys.exit("\n".join(f"error: {f.property}: {f.reason}" for f in result.failures))
    return result.inputs


def create(provider: Any, props: dict[str, Any]) -> dict[str, Any] | None:
    """Runs the job or study to its end; None when it failed (the provider has printed why, and written
    run.json). Ctrl-C cancels it (its processes run detached, as a Vertex job runs on without `pulumi up`),
    waits for it to stop, writes its run.json as CANCELLED and ends with one line saying so."""
    try:
        return provider.create(checked(provider, props)).outs
    except KeyboardInterrupt:
        sys.exit(interrupted(provider, props))
    except Exception as exc:  # the provider's errors name the job, its state and its logs
        print(f"error: {exc}", file=sys.stderr)
        return None


def interrupted(provider: Any, props: dict[str, Any], wait_seconds: float = CANCEL_WAIT_SECONDS) -> str:
    """Ctrl-C: cancel the run's live jobs, wait until they stopped (a second Ctrl-C stops waiting), record
    the run as the provider records a finished one; the one line that says what stopped and what is kept."""
    run_dir = Path(props.get("base_output_dir") or props["output_dir"])  # a job's, or a batch job's
    name = props["display_name"]
    stopped = cancel_all(run_dir)
    try:
        own = wait_stopped(run_dir, wait_seconds)
    except KeyboardInterrupt:
        return (
            f"interrupted twice: cancelled {name} ({stopped} local job(s)) without waiting for it to stop; "
            f"kept {run_dir} without a run.json (`make leftovers STACK=local` lists the job until it ends)"
        )
    if own is None:
        return f"interrupted before {name} started: nothing ran; kept {run_dir}"
    if not own.terminal:
        return (
            f"interrupted: cancelled {name} ({own.name}), still stopping after {wait_seconds:.0f} s; kept "
            f"{run_dir} without a run.json (`make leftovers STACK=local` lists the job until it ends)"
        )
    warnings: list[str] = []
    outputs = provider.read(own.name, props).outs
    outcome = Outcome.stored(outputs, provider.kind)
    run_record.keep(outcome, warnings.append, provider.kind, provider.kind.output_dir(outputs))
    kept = ", ".join(p.name for p in sorted(run_dir.iterdir()) if not p.name.startswith(".")) or "nothing"
    state = own.state.removeprefix("JOB_STATE_")
    line = f"interrupted: stopped {name} ({own.name}, {state}); kept {run_dir} ({kept}); `make runs` lists it"
    return "; ".join([line, *warnings])


def wait_stopped(run_dir: Path, wait_seconds: float) -> Any:
    """The run's own job record (None: it never started) once every job under `run_dir` stopped, or when
    `wait_seconds` ran out (the trainer makes one last backup on SIGTERM: trainer/checkpoints.py)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        statuses = [status for _, status in _statuses(run_dir)]
        if all(status.terminal for status in statuses) or time.monotonic() > deadline:
            own = [status for base, status in _statuses(run_dir) if base == run_dir]
            return own[0] if own else None
        time.sleep(POLL_SECONDS)


def _statuses(run_dir: Path) -> list[tuple[Path, Any]]:
    """(base output dir, status) of every local job recorded under `run_dir` (a study's trials too)."""
    found = []
    for record in sorted(run_dir.rglob(f"{LOCAL_RECORDS}/*/job.json")):
        base = record.parent.parent.parent
        status = LocalRunner(str(base)).get(LOCAL_PREFIX + record.parent.name)
        if status is not None:
            found.append((base, status))
    return found


def cancel_all(run_dir: Path) -> int:
    """Cancels every live local job whose records are under `run_dir` (a study's trials too); how many."""
    cancelled = 0
    for base, status in _statuses(run_dir):
        if not status.terminal:
            LocalRunner(str(base)).cancel(status.name)
            cancelled += 1
    return cancelled


def train(run_dir: Path, trainer_args: Sequence[str]) -> int:
    """One training job of the built-in trainer; 0 when it succeeded."""
    outs = create(CustomJobProvider(), to_props(job_args("train-local", run_dir, trainer_pool(trainer_args))))
    if outs is None:
        return 1
    print(f"Run record:  {run_dir / 'run.json'} (make runs lists it)", flush=True)
    return 0


def tune(run_dir: Path, count: int, image_size: int) -> int:
    """Synthetic data, then a 4-trial grid (learning rate x batch size), trials two at a time."""
    data = run_dir / "data"
    # In a session of its own, so Ctrl-C reaches this process alone, which stops it and says so once.
    convert = subprocess.Popen(
        [
            *(sys.executable, "-m", "trainer.create_tfrecords", "--source", "synthetic"),
            *("--count", str(count), "--image-size", str(image_size), "--output", str(data)),
        ],
        start_new_session=True,
    )
    try:
        if convert.wait() != 0:
            return 1  # create_tfrecords has said why
    except KeyboardInterrupt:
        convert.terminate()
        convert.wait()
        sys.exit(
            f"interrupted: stopped tune-local while it prepared its data; kept {run_dir} (no study started)"
        )
    trainer = trainer_pool(
        [
            *("--data-dir", str(data), "--image-size", str(image_size), "--weights", "none"),
            *("--epochs", "1", "--fine-tune-epochs", "0", "--mixed-precision", "off"),
        ],
        {"CLOUD_ML_HP_METRIC_TAG": "val_accuracy"},
    )
    study = StudyArgs(
        metric_id="val_accuracy",
        parameters=[
            Parameter("learning-rate", "DISCRETE", values=[0.01, 0.001]),
            Parameter("batch-size", "DISCRETE", values=[8, 16]),
        ],
        max_trial_count=4,
        parallel_trial_count=2,
        algorithm="grid",
    )
    started = time.monotonic()
    outs = create(TuningJobProvider(), tuning_props(job_args("tune-local", run_dir, trainer), study))
    if outs is None:
        return 1
    took = time.monotonic() - started
    print(f"study {outs['state']} in {took:.0f}s wall clock; trials under {run_dir}", flush=True)
    print(f"Run record:  {run_dir / 'run.json'} (make runs lists it)", flush=True)
    return 0


def local_root() -> Path:
    """The local stack's localDir (Pulumi.local.yaml), where its runs and these commands' folders are."""
    from infra.config.stack_file import load_stack

    return Path(load_stack(LOCAL_STACK, PROJECT_ROOT, inputs_present=False).local_dir)


def newest_model(root: Path) -> Path | None:
    """The model directory of the newest training run under `root` that succeeded and still holds a model
    the prediction server can load (`make train-local`'s and the local stack's)."""
    from infra.runs import list_runs

    for run in list_runs(str(root)):
        record = run.record or {}
        model_dir = record.get("model_dir")
        if (
            record.get("kind") != "custom_job"
            or record.get("state") != "JOB_STATE_SUCCEEDED"
            or not model_dir
        ):
            continue
        if not unservable(str(model_dir)):
            return Path(str(model_dir))
    return None


def model_or_exit(model_dir: Path | None, root: Path) -> Path:
    """The model to use: the one named (checked), else the newest local one; exits naming the fix."""
    if model_dir is None:
        found = newest_model(root)
        if found is None:
            sys.exit(
                f"error: no trained model under {root}: train one first (make train-local), or name one "
                "with --model-dir DIR (make ... MODEL_DIR=DIR)"
            )
        return found
    if reason := unservable(str(model_dir)):
        sys.exit(f"error: --model-dir {reason}")
    return model_dir


def run_id(prefix: str) -> str:
    """A folder name no other run takes, even one started in the same second: UTC time and a random tail."""
    return f"{prefix}-{datetime.datetime.now(datetime.UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def batch(images: Path, model_dir: Path | None) -> int:
    """A batch prediction of a folder of JPEG/PNG files by the local batch job, then its results table."""
    from infra import predictions
    from infra.vertex.batch.resource import BatchPredictionArgs
    from infra.vertex.batch.resource import to_props as batch_props
    from infra.vertex.batch_provider import BatchPredictionProvider

    root = local_root()
    model = model_or_exit(model_dir, root)
    output_dir = root / "predictions" / run_id("predict-local")
    print(f"Model:       {model}\nImages:      {images}", flush=True)
    args = BatchPredictionArgs(
        project="local",
        region="us-central1",
        display_name="predict-local",
        images=str(images.absolute()),
        output_dir=str(output_dir),
        service_account="local",
        labels={"run": "predict-local", **stack_labels(PULUMI_PROJECT, LOCAL_STACK)},
        timeout_seconds=TIMEOUT_SECONDS,
        artifact_uri=str(model.absolute()),
        serving_image="local",
        poll_interval_seconds=POLL_SECONDS,
        runner="local",
    )
    outs = create(BatchPredictionProvider(), {**batch_props(args), "base_output_dir": str(output_dir)})
    if outs is None:
        return 1
    code = predictions.main([str(output_dir)])
    print(f"Run record:  {output_dir / 'run.json'} (make runs lists it)", flush=True)
    return code


def serve(model_dir: Path | None, port: int) -> int:
    """The prediction server on 127.0.0.1:`port` for the newest local model (or the one named), in the
    foreground; first, the curl line that asks it about an example image once it is serving."""
    model = model_or_exit(model_dir, local_root())
    request = PROJECT_ROOT / ".local" / "serve-request.json"
    examples = sorted((PROJECT_ROOT / "examples" / "held-back").glob("*.png"))[:2]
    request.parent.mkdir(parents=True, exist_ok=True)
    request.write_bytes(request_body([p.read_bytes() for p in examples]) + b"\n")
    url = f"http://127.0.0.1:{port}"
    relative = request.relative_to(PROJECT_ROOT)
    print(
        f"Serving {model} on {url} (Ctrl-C stops it). Once it logs 'serving', in another shell here:\n"
        f"  curl -s -H 'Content-Type: application/json' --data @{relative} "
        f"{url}{serving_settings.DEFAULT_PREDICT_ROUTE}\n"
        f"  ({relative}: {', '.join(p.name for p in examples)}; your own images: "
        f".venv/bin/python -m serving.request IMAGE... > body.json)\n"
        f"  curl -s {url}{serving_settings.DEFAULT_HEALTH_ROUTE}   # 503 while the model loads, then 200",
        flush=True,
    )
    env = {
        **os.environ,
        serving_settings.STORAGE_URI: str(model.absolute()),
        serving_settings.PORT: str(port),
    }
    os.execve(sys.executable, [sys.executable, "-m", "serving", "--host", "127.0.0.1"], env)


MODEL_DIR_HELP = "a trained model dir (default: the newest local one)"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m infra.local_runs", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    train_cmd = commands.add_parser("train", help="one training job; trainer arguments after --")
    train_cmd.add_argument("--run-dir", required=True, type=Path, help="the run's folder (under runs/)")
    train_cmd.add_argument("trainer_args", nargs=argparse.REMAINDER, help="-- then the trainer's arguments")
    tune_cmd = commands.add_parser("tune", help="a 4-trial grid study on synthetic data")
    tune_cmd.add_argument("--run-dir", required=True, type=Path, help="the study's folder (under tuning/)")
    tune_cmd.add_argument("--count", type=int, default=96, help="synthetic images")
    tune_cmd.add_argument("--image-size", type=int, default=32)
    batch_cmd = commands.add_parser("batch", help="a batch prediction of a folder of JPEG/PNG images")
    batch_cmd.add_argument("--images", required=True, type=Path, help="the folder of images to classify")
    batch_cmd.add_argument("--model-dir", type=Path, help=MODEL_DIR_HELP)
    serve_cmd = commands.add_parser("serve", help="the prediction server on 127.0.0.1")
    serve_cmd.add_argument("--model-dir", type=Path, help=MODEL_DIR_HELP)
    serve_cmd.add_argument("--port", type=int, default=serving_settings.DEFAULT_PORT, help="default 8080")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "batch":
        return batch(args.images, args.model_dir)
    if args.command == "serve":
        return serve(args.model_dir, args.port)
    run_dir = args.run_dir.absolute()
    if args.command == "train":
        trainer_args = args.trainer_args[1:] if args.trainer_args[:1] == ["--"] else args.trainer_args
        return train(run_dir, trainer_args)
    return tune(run_dir, args.count, args.image_size)


if __name__ == "__main__":
    sys.exit(main())
