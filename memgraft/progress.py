"""Progress for long stages, in one style everywhere.

On a terminal, a rich bar (count, rate, elapsed, time left); anywhere else (a log
file, CI, a Ray worker's forwarded output) one line at most every
``interval_s`` seconds and one when the stage ends, never a wall::

    with Progress("embed entities and relations", total=len(texts), unit="texts") as bar:
        for batch in batches:
            ...
            bar.advance(len(batch))

A stage whose items each take minutes (an HGMem question on a CPU) calls ``tick()``
while it waits: off a terminal that prints the count at most every ``heartbeat_s``, so
a long wait still says it is alive. Both go to stderr, so results on stdout stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

INTERVAL_S = 5.0
HEARTBEAT_S = 30.0


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """A counter with a bar on a TTY, else throttled lines; ``enabled=False`` prints nothing."""

    def __init__(self, description: str, total: int | None = None, unit: str = "items", *,
                 interval_s: float = INTERVAL_S, heartbeat_s: float = HEARTBEAT_S,
                 stream: TextIO | None = None, enabled: bool = True,
                 bar: bool | None = None, clock: Callable[[], float] = time.monotonic):
        self.description, self.total, self.unit = description, total, unit
        self.interval_s, self.heartbeat_s, self.enabled, self.clock = interval_s, heartbeat_s, enabled, clock
        self.stream = stream or sys.stderr
        self.bar = enabled and (bar if bar is not None else self.stream.isatty())
        self.done = 0
        self._start = self._last = 0.0
        self._rich = None
        self._task = None

    def __enter__(self) -> "Progress":
        self._start = self._last = self.clock()
        if self.bar:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._rich = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn(self.unit), TimeElapsedColumn(), TimeRemainingColumn(),
                                      console=Console(file=self.stream))
            self._rich.start()
            self._task = self._rich.add_task(self.description, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done)
        elif self.enabled and self.clock() - self._last >= self.interval_s:
            self._line()

    def tick(self) -> None:
        """Nothing finished yet: a line anyway once ``heartbeat_s`` has passed without one (a bar redraws itself)."""
        if self._rich is None and self.enabled and self.clock() - self._last >= max(self.interval_s, self.heartbeat_s):
            self._line()

    def __exit__(self, *exc: object) -> None:
        if self._rich is not None:
            self._rich.stop()
        elif self.enabled:
            self._line(final=exc[0] is None)

    def line(self) -> str:
        """What the next progress line says."""
        elapsed = self.clock() - self._start
        of = f"/{self.total:,}" if self.total is not None else ""
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        rate = ""
        if elapsed > 0 and self.done:  # items of minutes each read better as time per item
            per_s = self.done / elapsed
            rate = f", {per_s:,.1f} {self.unit}/s" if per_s >= 1 else f", {_duration(1 / per_s)} each"
        left = ""
        if self.total and self.done and self.done < self.total and elapsed > 0:
            left = f", about {_duration((self.total - self.done) * elapsed / self.done)} left"
        return f"{self.description}: {self.done:,}{of} {self.unit}{pct}{rate}, {_duration(elapsed)} elapsed{left}"

    def _line(self, final: bool = False) -> None:
        self._last = self.clock()
        self.stream.write(self.line() + (" - done" if final else "") + "\n")
        self.stream.flush()
