"""Backups by the clock: a run killed between two backups resumes after the last one, so it repeats at most
--checkpoint-minutes of training; a SIGTERM (a Spot VM's preemption notice) backs up at once and stops."""

from __future__ import annotations

import itertools
import re
import signal
from pathlib import Path

import pytest

from tests.trainer.conftest import CLOCK_MINUTES, backup_lines
from tests.trainer.helpers import epoch_lines
from trainer import checkpoints

# A backup waits for the end of the step that is running when it falls due: allow one step (and a loaded
# machine) on top of the interval.
STEP_SLACK_SECONDS = 6.0
RESUMED = re.compile(r"backup found: resuming after epoch 1 step (\d+)")


@pytest.mark.slow
def test_killed_between_backups_resumes_after_the_last(interrupted_runs: dict) -> None:
    r = interrupted_runs
    assert r["first_rc"] == -signal.SIGKILL, r["first"][-3000:]
    backups = backup_lines(r["first"])
    assert len(backups) >= 2 and all(why.startswith("every") for _, why, _ in backups)
    # The clock's promise: never more than the interval (plus the step running when it fell due) between
    # backups, and so between the last backup and the kill.
    times = [when for when, _, _ in backups] + [r["killed_at"]]
    assert max(b - a for a, b in itertools.pairwise(times)) <= CLOCK_MINUTES * 60 + STEP_SLACK_SECONDS
    assert "head epoch 1/1" not in r["first"]  # killed mid-epoch: an epoch backup alone would lose it all
    # The next run starts right after the last backup: it repeats only what came after it.
    resumed = RESUMED.search(r["second"])
    assert resumed and int(resumed[1]) == backups[-1][2], r["second"][-3000:]


@pytest.mark.slow
def test_sigterm_backs_up_at_once_and_stops(interrupted_runs: dict) -> None:
    r = interrupted_runs
    assert r["second_rc"] == checkpoints.PREEMPTED_EXIT_STATUS, r["second"][-3000:]
    notice = [step for _, why, step in backup_lines(r["second"]) if why == "preemption notice"]
    assert len(notice) == 1, r["second"][-3000:]
    resumed = RESUMED.search(r["third"])
    assert resumed and int(resumed[1]) == notice[0], r["third"][-3000:]  # nothing repeated
    assert r["third_rc"] == 0, r["third"][-3000:]
    assert len(epoch_lines(r["third"], "head")) == 1
    assert (r["model_dir"] / "saved_model.pb").exists()


def test_a_notice_without_time_for_a_backup_stops_without_one(tmp_path: Path) -> None:
    now = [100.0]
    notice = checkpoints.Notice(clock=lambda: now[0])
    notice.receive()
    now[0] += checkpoints.NOTICE_SECONDS - checkpoints.NOTICE_MARGIN_SECONDS - 1
    backup = checkpoints.ClockBackup(str(tmp_path), 10, notice, clock=lambda: now[0])
    backup.backup_seconds = 2.0  # the last backup took longer than the second left
    with pytest.raises(checkpoints.Preempted, match="resumes from the last backup"):
        backup._on_notice(4)
