"""Backups by the clock: a resumable backup at least every N minutes and at each epoch's end, and one more
when the machine says it is going away.

Keras' BackupAndRestore backs up per epoch or per N steps; neither bounds the paid time a preemption
loses when an epoch takes most of an hour. This subclass backs up after the first step that ends N
minutes or more after the last backup, recording the step, so a restarted job resumes at the next step.

Preemption notice. Compute Engine preempts a Spot VM with an ACPI G2 Soft Off and powers it off 30
seconds later (Compute Engine API, Scheduling.skipGuestOsShutdown: "120 seconds between GCE ACPI G2 Soft
Off and ACPI G3 Mechanical Off for Standard VMs and 30 seconds for Spot VMs"; Spot VMs, "Preemption
process"; both read 2026-11-26). The guest's shutdown stops its containers, and a container's main
process gets SIGTERM. Vertex AI documents no notice of its own for custom training on Spot VMs (its
training-service page lists only restarts; read 2026-11-26), so the trainer treats SIGTERM as the notice:
at the next step's end it backs up, if the last backup took less time than is left of the 30 seconds,
and stops (exit status 143, 128 + SIGTERM). Python ignores nothing here: as a container's PID 1 it would
not even die of SIGTERM without a handler.

With several workers every one must save at the same step (reading synced variables for a checkpoint is
a collective): they agree on "back up now" with an all-reduce at each step.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

import tensorflow as tf
import tf_keras as keras

log = logging.getLogger("trainer.task")

DEFAULT_MINUTES = 10.0
# Spot VMs: seconds from the ACPI G2 Soft Off to the power-off (see the module docstring's source).
NOTICE_SECONDS = 30.0
# Kept in hand out of the notice: the process must still stop and the container exit.
NOTICE_MARGIN_SECONDS = 5.0
PREEMPTED_EXIT_STATUS = 128 + signal.SIGTERM


class Preempted(Exception):
    """The machine is going away: training stopped after the last backup it could make."""


class Notice:
    """Set by SIGTERM (or a test); read at each step's end."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.received_at: float | None = None

    def receive(self, signum: int = signal.SIGTERM, frame: FrameType | None = None) -> None:
        if self.received_at is None:
            self.received_at = self.clock()

    @property
    def received(self) -> bool:
        return self.received_at is not None

    def seconds_left(self) -> float:
        return NOTICE_SECONDS - (self.clock() - (self.received_at or self.clock()))

    def install(self) -> None:
        """SIGTERM sets the notice (only the main thread may install a handler; tests run elsewhere)."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.receive)


Agree = Callable[[bool, bool], tuple[bool, bool]]


def agreement(strategy: tf.distribute.Strategy, workers: int) -> Agree:
    """(notice, due) as any worker sees them, the same answer on every worker; one worker: its own."""
    if workers <= 1:
        return one_worker

    @tf.function
    def summed(flags: tf.Tensor) -> tf.Tensor:
        # Each replica's copy, summed over every replica of every worker (tested with two local workers).
        per_replica = strategy.run(lambda: tf.identity(flags))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    def agree(notice: bool, due: bool) -> tuple[bool, bool]:
        notices, dues = summed(tf.constant([float(notice), float(due)])).numpy()
        return bool(notices > 0), bool(dues > 0)

    return agree


def one_worker(notice: bool, due: bool) -> tuple[bool, bool]:
    return notice, due


class ClockBackup(keras.callbacks.BackupAndRestore):
    """BackupAndRestore every `minutes` (at a step's end), at each epoch's end, and on a preemption notice."""

    def __init__(
        self,
        backup_dir: str,
        minutes: float,
        notice: Notice,
        agree: Agree = one_worker,
        clock: Callable[[], float] = time.monotonic,
        who: str = "chief-0",
    ) -> None:
        # An integer save_freq: batch hooks run, and a backup records its step (a restart resumes after it).
        super().__init__(backup_dir, save_freq=1)
        self.interval, self.notice, self.agree, self.clock, self.who = minutes * 60, notice, agree, clock, who
        self.last_backup, self.backup_seconds = 0.0, 0.0

    def on_train_begin(self, logs: dict | None = None) -> None:
        super().on_train_begin(logs)
        state = self._training_state
        epoch, step = int(state._ckpt_saved_epoch.numpy()), int(state._ckpt_saved_batch.numpy())
        if epoch >= 0 and step >= 0:
            log.info("%s: backup found: resuming after epoch %d step %d", self.who, epoch + 1, step + 1)
        self.last_backup = self.clock()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        notice, due = self.agree(self.notice.received, self.clock() - self.last_backup >= self.interval)
        if notice:
            self._on_notice(batch)
        if due:
            self._timed_backup(self._current_epoch, batch, f"every {self.interval / 60:g} min")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._timed_backup(epoch, None, "")
        if self.agree(self.notice.received, False)[0]:
            raise Preempted(f"{self.who}: preemption notice: epoch {epoch + 1} backed up; stopping")

    def _on_notice(self, batch: int) -> None:
        left = self.notice.seconds_left() - NOTICE_MARGIN_SECONDS
        if self.backup_seconds <= left:
            self._timed_backup(self._current_epoch, batch, "preemption notice")
            raise Preempted(f"{self.who}: preemption notice: backed up at step {batch + 1}; stopping")
        raise Preempted(
            f"{self.who}: preemption notice with {left:.0f} s left, and a backup takes "
            f"{self.backup_seconds:.0f} s: stopping; the restart resumes from the last backup"
        )

    def _timed_backup(self, epoch: int, batch: int | None, why: str) -> None:
        started = self.clock()
        if batch is None:
            self._backup(epoch=epoch)
        else:
            self._backup(epoch=epoch, batch=batch)
        now = self.clock()
        self.last_backup, self.backup_seconds = now, now - started
        if why:  # the epoch-end backups are implied by the epoch lines
            log.info(
                "%s: backup (%s) at epoch %d step %d in %.1fs",
                self.who,
                why,
                epoch + 1,
                (batch or 0) + 1,
                self.backup_seconds,
            )


class Backups:
    """The run's backup settings, one notice for all its phases; `callback` makes a phase's callback."""

    def __init__(self, minutes: float, agree: Agree = one_worker, who: str = "chief-0") -> None:
        self.minutes, self.agree, self.who = minutes, agree, who
        self.notice = Notice()

    def callback(self, backup_dir: str) -> ClockBackup:
        return ClockBackup(backup_dir, self.minutes, self.notice, self.agree, who=self.who)
