"""A write's time budget: ``serving.write_timeout_s`` from when it starts, and its client's disconnect.

A group's maintenance runs in a worker thread that Python cannot interrupt, so it checks its
budget at the points it passes between planning steps: every embedding call (the new memories,
the history search's vectors, the changed texts) and the commit itself. Past the deadline, or
once the client is gone, the next check raises and the group is not committed: nothing is
written, the client is told so (503 ``WriteTimeout``: send it again later), and the thread stops
instead of working on for a client that left. The commit is checked as it starts, and a check
inside its transaction rolls the whole group back.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import wraps
from typing import Any, Callable, Iterator


class WriteTimeout(RuntimeError):
    """A group whose maintenance passed ``serving.write_timeout_s``: nothing was written; 503, retry later."""


class WriteCancelled(RuntimeError):
    """A group whose client went away before it was committed: nothing was written."""


@dataclass
class Budget:
    timeout_s: float
    what: str = "the write"
    cancelled: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)

    def check(self) -> None:
        if self.cancelled.is_set():
            raise WriteCancelled(f"{self.what} was cancelled by its client before it was committed; nothing was "
                                 f"written")
        if time.monotonic() - self.started > self.timeout_s:
            raise WriteTimeout(f"{self.what} took longer than serving.write_timeout_s ({self.timeout_s:g} s); "
                               f"nothing was written: send it again later, or as smaller groups")


_CURRENT: ContextVar[Budget | None] = ContextVar("memgraft_write_budget", default=None)


@contextmanager
def bounded(budget: Budget | None) -> Iterator[None]:
    """Run the block (in one thread) under ``budget``: :func:`checkpoint` calls inside it check it."""
    token = _CURRENT.set(budget)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def checkpoint() -> None:
    """Raise if the write this thread runs is past its budget; a no-op outside a write (searches, answers)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.check()


def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with a checkpoint before it runs (the bank's commit)."""

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        checkpoint()
        return fn(*args, **kwargs)

    return run
