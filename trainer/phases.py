"""Resume across restarts: per-phase BackupAndRestore dirs, plus the weights of each completed phase.

BackupAndRestore resumes inside one `fit` and deletes its backup when that fit ends; training has two fits
(head, then fine-tuning), so each finished phase also leaves its weights and a DONE marker. A restarted job
skips finished phases, loads the last one's weights (and their per-epoch history, for metrics.json) and
resumes the unfinished phase at its last epoch. The checkpoint dir here is the run's own folder
(trainer/run_identity.py).
The marker is written by a callback that runs before BackupAndRestore deletes its backup, so no moment exists
at which a restart finds neither.
"""

from __future__ import annotations

import json
import posixpath

import tensorflow as tf
import tf_keras as keras

from trainer.distribute import Role
from trainer.outputs import write_dir

DONE = "DONE"
HISTORY = "history.json"


def backup_dir(checkpoint_dir: str, phase: str) -> str:
    return posixpath.join(checkpoint_dir, f"backup-{phase}")


def _phase_dir(checkpoint_dir: str, phase: str) -> str:
    return posixpath.join(checkpoint_dir, f"done-{phase}")


def is_done(checkpoint_dir: str, phase: str) -> bool:
    return tf.io.gfile.exists(posixpath.join(_phase_dir(checkpoint_dir, phase), DONE))


def mark_done(
    model: keras.Model, checkpoint_dir: str, phase: str, role: Role, history: dict | None = None
) -> None:
    with write_dir(_phase_dir(checkpoint_dir, phase), role) as path:
        model.save_weights(posixpath.join(path, "weights"))
        with tf.io.gfile.GFile(posixpath.join(path, HISTORY), "w") as f:
            f.write(json.dumps({k: [float(v) for v in vs] for k, vs in (history or {}).items()}) + "\n")
        with tf.io.gfile.GFile(posixpath.join(path, DONE), "w") as f:
            f.write(phase + "\n")  # written last: DONE means the weights and history are complete


def load_done(model: keras.Model, checkpoint_dir: str, phase: str) -> None:
    model.load_weights(posixpath.join(_phase_dir(checkpoint_dir, phase), "weights")).expect_partial()


def load_history(checkpoint_dir: str, phase: str) -> dict[str, list[float]]:
    """The per-epoch metrics of a finished phase (the epochs its last process ran), as fit returned them."""
    path = posixpath.join(_phase_dir(checkpoint_dir, phase), HISTORY)
    if not tf.io.gfile.exists(path):
        return {}
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


class MarkDone(keras.callbacks.Callback):
    """Marks the phase done at the end of its fit; must precede BackupAndRestore in the callback list."""

    def __init__(self, checkpoint_dir: str, phase: str, role: Role):
        super().__init__()
        self.checkpoint_dir, self.phase, self.role = checkpoint_dir, phase, role

    def on_train_end(self, logs: dict | None = None) -> None:
        # fit's History callback holds this fit's epochs (keras sets it as model.history).
        recorded = getattr(getattr(self.model, "history", None), "history", None)
        mark_done(self.model, self.checkpoint_dir, self.phase, self.role, recorded)
