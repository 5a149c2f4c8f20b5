"""Polling a long-running thing (a job, a build) until it is done or a deadline passes, with backoff."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

S = TypeVar("S")

POLL_CAP_SECONDS = 60.0
POLL_GROWTH = 1.5


def duration_text(seconds: float) -> str:
    """How long, as messages say it: `42s`, `3m 05s`, `2h 07m`."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def poll_until(
    status: S,
    read: Callable[[S], S],
    done: Callable[[S], bool],
    until: float,
    first_interval: float,
    seen: Callable[[S, S], None] = lambda _before, _now: None,
) -> S:
    """Read `status` again with growing gaps (x1.5, capped at a minute or the first gap) until `done` or
    `until` (a wall-clock time); `seen(before, now)` is told of every read, for state lines."""
    interval = first_interval
    cap = max(interval, POLL_CAP_SECONDS)
    while not done(status) and time.time() < until:
        time.sleep(min(interval, max(0.0, until - time.time())))
        interval = min(interval * POLL_GROWTH, cap)
        current = read(status)
        seen(status, current)
        status = current
    return status
