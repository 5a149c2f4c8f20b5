"""A finished phase is recorded before BackupAndRestore deletes its backup: no restart finds neither."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tf_keras as keras

from trainer import distribute, phases, task


class Killed(Exception):
    pass


class KillAtTrainEnd(keras.callbacks.Callback):
    """Stands in for the process dying right after the phase's other end-of-fit callbacks ran."""

    def on_train_end(self, logs: dict | None = None) -> None:
        raise Killed


def test_phase_is_done_before_its_backup_is_deleted(tmp_path: Path) -> None:
    ckpt = str(tmp_path / "checkpoints")
    net = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    net.compile(optimizer="sgd", loss="mse")
    role = distribute.role(None)
    callbacks = task.phase_callbacks(task.Phase("head", 0, 2), ckpt, str(tmp_path / "logs"), role)
    x, y = np.ones((8, 2), np.float32), np.ones((8, 1), np.float32)
    with pytest.raises(Killed):
        net.fit(x, y, epochs=2, verbose=0, callbacks=[*callbacks, KillAtTrainEnd()])
    backup = Path(phases.backup_dir(ckpt, "head"))
    assert backup.is_dir() and not [p for p in backup.rglob("*") if p.is_file()]  # backup deleted
    assert phases.is_done(ckpt, "head")  # ... and the phase is recorded, so a restart skips it

    fresh = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    phases.load_done(fresh, ckpt, "head")
    for a, b in zip(fresh.get_weights(), net.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
