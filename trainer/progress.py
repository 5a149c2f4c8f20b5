"""One progress line at a steady interval while a long loop runs: done, rate, elapsed, time left."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def duration(seconds: float) -> str:
    """H:MM:SS."""
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def progress_line(label: str, done: int, total: int, elapsed: float) -> str:
    rate = done / elapsed if elapsed > 0 else 0.0
    left = duration((total - done) / rate) if rate > 0 else "unknown"
    percent = 100.0 * done / total if total else 100.0
    return (
        f"{label}: {done:,}/{total:,} images ({percent:.0f} %), {rate:,.1f} images/s, "
        f"elapsed {duration(elapsed)}, about {left} left"
    )


class Progress:
    """Counts from the loop's thread; a daemon thread emits a line every `interval` seconds and at the end."""

    def __init__(
        self, label: str, total: int, interval: float, emit: Callable[[str], None], clock=time.monotonic
    ) -> None:
        self.label, self.total, self.interval, self.emit, self.clock = label, total, interval, emit, clock
        self.done = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._report, daemon=True, name="progress")

    def add(self, n: int = 1) -> None:
        self.done += n

    def line(self) -> str:
        return progress_line(self.label, self.done, self.total, self.clock() - self._start)

    def _report(self) -> None:
        while not self._stop.wait(self.interval):
            self.emit(self.line())

    def __enter__(self) -> Progress:
        self._start = self.clock()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.emit(self.line())
