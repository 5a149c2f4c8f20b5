"""A small hyperparameter study of the built-in trainer on this machine: the tuning job resource's local
runner, a 4-trial grid (learning rate x batch size), trials two at a time; prints one line per trial, the
best, and the wall-clock time.

    .venv/bin/python benchmarks/local_study.py [--output .local/tune-local] [--count 96] [--image-size 32]

(`make tune-local` runs it.) The same study on Vertex is the stack config `tuning` (docs/tuning.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from infra.vertex.custom_job.resource import CustomJobArgs, WorkerPool
from infra.vertex.tuning.resource import Parameter, StudyArgs, tuning_props
from infra.vertex.tuning_provider import TuningJobProvider


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=".local/tune-local")
    parser.add_argument("--count", type=int, default=96, help="synthetic images")
    parser.add_argument("--image-size", type=int, default=32)
    args = parser.parse_args()
    out = Path(args.output).absolute()
    data = out / "data"
    subprocess.run(
        [
            *(sys.executable, "-m", "trainer.create_tfrecords", "--source", "synthetic"),
            *("--count", str(args.count), "--image-size", str(args.image_size), "--output", str(data)),
        ],
        check=True,
    )
    trainer = WorkerPool(
        machine_type="n1-standard-4",
        image_uri="local",
        command=["python", "-m", "trainer.task"],
        args=[
            *("--data-dir", str(data), "--image-size", str(args.image_size), "--weights", "none"),
            *("--epochs", "1", "--fine-tune-epochs", "0", "--mixed-precision", "off"),
        ],
        env={"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1", "CLOUD_ML_HP_METRIC_TAG": "val_accuracy"},
    )
    trial_job = CustomJobArgs(
        project="local",
        region="us-central1",
        display_name="tune-local",
        worker_pools=[trainer],
        service_account="local",
        base_output_dir=str(out / "study"),
        labels={},
        timeout_seconds=1800,
        poll_interval_seconds=1.0,
        runner="local",
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
    provider = TuningJobProvider()
    checked = provider.check({}, tuning_props(trial_job, study))
    if checked.failures:
        sys.exit("\n".join(f"{f.property}: {f.reason}" for f in checked.failures))
    started = time.monotonic()
    outs = provider.create(checked.inputs).outs
    took = time.monotonic() - started
    print(f"study {outs['state']} in {took:.0f}s wall clock; trials under {out / 'study'}", flush=True)


if __name__ == "__main__":
    main()
