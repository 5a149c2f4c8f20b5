"""Where an epoch's training time goes: images per second, and the share of it spent waiting for input.

A step's wait runs from the host's call of the step function to the moment the step has its batch in hand
(`tf.timestamp` ordered after the batch, inside the step): Keras fetches the batch inside the step
function, where batch callbacks cannot see it. The share is the epoch's summed waits over its training
time (from the end of its first step, which on the first epoch also traces the step function, to the end
of its last; validation is not training time). Time spent in callbacks between steps (a backup) counts as
training time, not as waiting.

On a GPU the host calls the next step as soon as it has issued the last one's work, so a wait is time the
host, which feeds the device, had no batch: above the threshold, the input pipeline is the bottleneck.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import tensorflow as tf
import tf_keras as keras

log = logging.getLogger("trainer.task")

# Above this share of step time waiting for input, the job is input-bound: the TensorFlow profiler's own
# "HIGHLY input-bound" threshold (kHighlyInfeedBoundThresholdInPercent = 20; 5-20 % is "moderately"),
# tensorflow/core/profiler/convert/op_stats_to_input_pipeline_analysis.cc, read 2026-11-26.
INPUT_BOUND_FRACTION = 0.20
# Steps an epoch needs for a figure: its first (which traces the step function and waits for the first
# batch) is left out, and one step after it is a single sample. A 48-image epoch of batch 32 is one step:
# its "0.9 images/s" was the tracing, not the training.
MIN_STEPS = 3

FIXES = (
    "a machine type with more vCPUs per GPU (machineType): decoding JPEGs is CPU work",
    "a smaller image size (imageSize): fewer pixels to decode per image",
    "the data's bucket in the job's region (gs:// reads across regions are slower)",
    "or, if the accelerator cannot be fed faster, a smaller one (acceleratorType) that costs less per hour "
    "for the same images per second",
)


@dataclass(frozen=True)
class EpochThroughput:
    images_per_second: float
    input_wait_fraction: float

    @property
    def input_bound(self) -> bool:
        return self.input_wait_fraction > INPUT_BOUND_FRACTION


def epoch_throughput(images: int, seconds: float, wait_seconds: float) -> EpochThroughput:
    """The epoch's figures from its measured span; a span too short to measure gives zeros."""
    if seconds <= 0:
        return EpochThroughput(0.0, 0.0)
    return EpochThroughput(images / seconds, min(max(wait_seconds / seconds, 0.0), 1.0))


def input_bound_message(phase: str, epoch: int, figures: EpochThroughput) -> str:
    return (
        f"input-bound ({phase}, epoch {epoch}): the training loop waited for the next batch "
        f"{figures.input_wait_fraction:.0%} of the time (more than {INPUT_BOUND_FRACTION:.0%}), so the "
        "accelerator idles while it is billed. Fixes: " + "; ".join(FIXES)
    )


class StepClock:
    """The seconds each training step waited for its batch: from the host's call of the step function to
    the moment its batch is in hand, summed inside the step (get_next runs there, out of the callbacks'
    sight)."""

    def __init__(self, local_replicas: int = 1) -> None:
        # Plain variables (made outside any strategy scope): one replica per worker writes them.
        with tf.device("/cpu:0"):
            self.called = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="step_called")
            self.waited = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="step_waited")
        self.local_replicas = max(local_replicas, 1)

    def calling(self) -> None:
        """The step function is about to be called (time.time(): the clock tf.timestamp reads)."""
        self.called.assign(time.time())

    def waited_seconds(self) -> float:
        return float(self.waited.numpy())

    def timed(self, step: Callable) -> Callable:
        """`step` (a model's train_step), adding the time its batch took to arrive to `waited`."""

        def timed_step(data):  # type: ignore[no-untyped-def]
            with tf.control_dependencies(tf.nest.flatten(data)):
                arrived = tf.timestamp()
            replica = tf.distribute.get_replica_context()
            index = replica.replica_id_in_sync_group if replica is not None else 0
            measuring = tf.equal(tf.math.floormod(index, self.local_replicas), 0)

            def record() -> tf.Operation:
                return tf.group(self.waited.assign_add(arrived - self.called.read_value()))

            recorded = tf.cond(measuring, record, tf.no_op)
            with tf.control_dependencies([recorded]):
                return step(data)

        return timed_step

    @contextmanager
    def timing(self, model: keras.Model) -> Iterator[None]:
        """While inside, `model.fit` runs the timed step (an instance attribute over the class's method)."""
        model.train_step = self.timed(model.train_step)
        try:
            yield
        finally:
            del model.train_step


class ThroughputMeter(keras.callbacks.Callback):
    """Per epoch: images/s of the training steps (validation excluded) and the share of that time spent
    waiting for batches. Goes after the other callbacks: its clock starts when theirs have run."""

    def __init__(self, clock: StepClock, global_batch: int) -> None:
        super().__init__()
        self._supports_tf_logs = True  # never reads the logs: no per-step device sync for it
        self.clock, self.global_batch = clock, global_batch
        self.history: list[EpochThroughput | None] = []  # None: too few steps to measure
        self.steps, self.began, self.first_end, self.last_end, self.first_wait = 0, 0.0, 0.0, 0.0, 0.0

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self.steps, self.began = 0, time.time()
        self.first_wait = self.clock.waited_seconds()

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self.clock.calling()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.steps += 1
        self.last_end = time.time()
        if self.steps == 1:
            # Measured from here on: the first step (tracing, the first batch after validation) is left out.
            self.first_end, self.first_wait = self.last_end, self.clock.waited_seconds()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        waited = self.clock.waited_seconds() - self.first_wait
        measured = self.steps >= MIN_STEPS
        span = self.last_end - self.first_end
        self.history.append(
            epoch_throughput((self.steps - 1) * self.global_batch, span, waited) if measured else None
        )

    @property
    def last(self) -> EpochThroughput | None:
        return self.history[-1] if self.history else None

    def not_measured(self) -> str:
        """Why the last epoch has no figures (for its epoch line)."""
        return f"throughput not measured: {self.steps} step(s), at least {MIN_STEPS} needed"

    def as_json(self) -> dict[str, list[float | None]]:
        """Per epoch; null for an epoch too short to measure."""
        return {
            "images_per_second": [round(f.images_per_second, 2) if f else None for f in self.history],
            "input_wait_fraction": [round(f.input_wait_fraction, 4) if f else None for f in self.history],
        }
