"""The periodic progress line: emitted at its interval while the loop runs, not only at the end."""

from __future__ import annotations

import itertools
import time

from trainer.progress import Progress


def test_progress_lines_come_at_the_interval_while_the_work_runs() -> None:
    lines: list[str] = []
    clock = itertools.count(0.0, 10.0)  # each reading 10 s after the one before
    with Progress("replica 1/2", 100, 0.01, lines.append, clock=lambda: next(clock)) as progress:
        progress.add(10)
        deadline = time.monotonic() + 30
        while len(lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        before_exit = list(lines)
    assert before_exit[:2] == [
        "replica 1/2: 10/100 images (10 %), 1.0 images/s, elapsed 0:00:10, about 0:01:30 left",
        "replica 1/2: 10/100 images (10 %), 0.5 images/s, elapsed 0:00:20, about 0:03:00 left",
    ]
    assert len(lines) > len(before_exit)  # and a closing line at the end
