"""Waiting in tests on states and events, never on the clock.

``wait_until`` polls a condition; its deadline is generous and only turns a hang into a
failure, so a slow or busy CPU cannot flake a test. ``Gate`` is the same idea across
processes on Ray: code inside an actor or replica says it arrived and waits until the
test opens the gate.
"""

from __future__ import annotations

import asyncio
import time
from typing import Callable

DEADLINE_S = 120.0


def wait_until(condition: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"never happened within {deadline_s:.0f} s: {what}"
        time.sleep(0.02)


class _Gate:
    """Wrapped with ``ray.remote`` by :func:`gate`: arrivals counted, waiters released by ``open``."""

    def __init__(self):
        self.arrivals = 0
        self.opened = asyncio.Event()

    async def arrive(self) -> int:
        self.arrivals += 1
        return self.arrivals

    async def count(self) -> int:
        return self.arrivals

    async def open(self) -> None:
        self.opened.set()

    async def wait(self) -> None:
        await self.opened.wait()


GATE_NAMESPACE = "memgraft-tests"


def gate(name: str | None = None):
    """A new gate actor; a named one is found anywhere (a Serve replica) with :func:`find_gate`."""
    import ray

    options = {"num_cpus": 0, **({"name": name, "namespace": GATE_NAMESPACE} if name else {})}
    return ray.remote(_Gate).options(**options).remote()


def find_gate(name: str):
    import ray

    return ray.get_actor(name, namespace=GATE_NAMESPACE)


def pass_gate(handle, deadline_s: float = DEADLINE_S) -> None:
    """From inside an actor or a replica: arrive at the gate, then wait until the test opens it."""
    import ray

    ray.get(handle.arrive.remote())
    ray.get(handle.wait.remote(), timeout=deadline_s)
