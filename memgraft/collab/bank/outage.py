"""Riding out a database outage: one group's write tried again, with backoff, for a bounded time.

Why it is safe: a group commits in one transaction, keyed by ``(team, group_id)``
(the ``groups`` table's primary key), and ``BankUnavailable``/``BankTimeout`` mean
nothing of the failed transaction committed, except when the server went away
during ``COMMIT`` itself, where the answer is lost but the group may be in. The
retry then finds the group applied (``Updater.apply`` checks first, and the
primary key refuses a second insert), so a group is never applied twice; whether
it was this run's commit is told by its ``applied_at``, written by this process.
Why bounded: a server that stays away should stop the team with the error named,
not retry forever; a rerun resumes at that group.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from memgraft.collab.bank.errors import BankTimeout, BankUnavailable

T = TypeVar("T")
FIRST_WAIT_S = 0.1
MAX_WAIT_S = 2.0  # backoff doubles up to this: a server back after a restart is found within it


@dataclass
class Outage:
    """How one operation met the outage: the retries it took and the seconds it waited."""

    retries: int = 0
    waited_s: float = 0.0


def ride_out(fn: Callable[[], T], budget_s: float, where: str, what: str, outage: Outage | None = None,
             sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> T:
    """``fn()``, tried again while it raises ``BankUnavailable``/``BankTimeout``, for ``budget_s`` seconds from
    the first failure (``bank.outage_retry_s``); past it, one ``BankUnavailable`` naming the bank, ``what`` was
    being done, how long it waited and the last error."""
    outage = outage if outage is not None else Outage()
    first, wait = None, FIRST_WAIT_S
    while True:
        try:
            return fn()
        except (BankUnavailable, BankTimeout) as err:
            now = clock()
            first = now if first is None else first
            if now - first + wait > budget_s:
                last = (str(err).splitlines() or [type(err).__name__])[0].removeprefix(f"{where}: ")
                raise BankUnavailable(f"{where}: still unavailable after {outage.retries} retries over "
                                      f"{now - first:.1f}s (bank.outage_retry_s={budget_s:g}) while {what}; "
                                      f"nothing of it was written, a rerun resumes there. Last error: {last}") from err
            sleep(wait)
            outage.retries += 1
            outage.waited_s += wait
            wait = min(MAX_WAIT_S, wait * 2)
