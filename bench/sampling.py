"""How the benches measure a run: memory and CPU per phase of this process tree, a quiet-machine wait, timed blocks."""

from __future__ import annotations

import os
import resource
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from bench.common import machine_busy_cpu_s

MB = 1024 * 1024
NOISE_LIMIT = 0.2  # cores other processes may use before a figure is flagged


# -- memory ------------------------------------------------------------------------------------


class ProcessSampler:
    """Per named phase: peak RSS of this process and of every process under it (Ray's), and
    CPU-seconds used by this tree against those used by the rest of the machine (the noise)."""

    SYSTEM = ("raylet", "gcs_server", "dashboard", "log_monitor", "monitor.py", "runtime_env", "agent")

    def __init__(self, interval_s: float = 0.25):
        import psutil

        self._psutil = psutil
        self.interval_s = interval_s
        self.root = psutil.Process()
        self.phase = "start"
        self.peaks: dict[str, dict[str, float]] = {}
        self.cpu: dict[str, dict[str, float]] = {}  # per phase: wall, CPU-seconds of this tree and of the rest of the machine
        self._kind: dict[int, str] = {}
        self._cpu_seen: dict[int, float] = {}  # last CPU seconds seen per process of this tree (exited ones keep theirs)
        self._lock = threading.Lock()
        self._mark = self._cpu_mark()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)

    def start(self) -> "ProcessSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.set_phase("end")

    def set_phase(self, name: str) -> None:
        """Close the current phase's CPU account (after a last sample) and start ``name``."""
        self.sample()
        with self._lock:
            mark = self._cpu_mark()
            wall, busy, own = (mark[i] - self._mark[i] for i in range(3))
            if self.phase != "start":
                self.cpu[self.phase] = {"wall_s": wall, "own_cpu_s": own, "machine_busy_cpu_s": busy,
                                        "other_cpu_s": max(0.0, busy - own),
                                        "other_cores": max(0.0, busy - own) / wall if wall else 0.0}
            self._mark = mark
            self.phase = name

    def _cpu_mark(self) -> tuple[float, float, float]:
        """(wall, busy CPU-seconds of the whole machine, CPU-seconds of this process tree so far)."""
        return time.perf_counter(), machine_busy_cpu_s(), sum(self._cpu_seen.values())
    def _classify(self, proc: Any) -> str:
        kind = self._kind.get(proc.pid)
        if kind:
            return kind
        try:
            cmd = " ".join(proc.cmdline())
        except (self._psutil.Error, OSError):
            return "system"
        if cmd.startswith("ray::") or "default_worker.py" in cmd:
            kind = "worker"
        elif any(s in cmd for s in self.SYSTEM) or proc.name() in ("raylet", "gcs_server"):
            kind = "system"
        else:
            return "system"  # not yet known (a worker starting up): ask again next time
        self._kind[proc.pid] = kind
        return kind

    def sample(self) -> None:
        driver = workers = system = biggest = 0.0
        try:
            driver = self.root.memory_info().rss
            children = self.root.children(recursive=True)
        except self._psutil.Error:
            return
        for proc in [self.root, *children]:
            try:
                cpu = proc.cpu_times()
                self._cpu_seen[proc.pid] = cpu.user + cpu.system
                if proc is self.root:
                    continue
                rss = proc.memory_info().rss
                kind = self._classify(proc)
            except self._psutil.Error:
                continue
            if kind == "worker":
                workers += rss
                biggest = max(biggest, rss)
            else:
                system += rss
        peak = self.peaks.setdefault(self.phase, {})  # a sample racing a phase change may land in either
        for key, value in (("total", driver + workers + system), ("driver", driver), ("workers", workers),
                           ("ray_system", system), ("largest_worker", biggest)):
            peak[key] = max(peak.get(key, 0.0), value / MB)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()




def wait_quiet(max_wait_s: float, threshold: float = 0.15, quiet_for: int = 3, window_s: float = 2.0) -> float:
    """Wait (up to ``max_wait_s``) until the machine has kept under ``threshold`` cores busy
    for ``quiet_for`` windows in a row; return the seconds waited."""
    t0, streak = time.perf_counter(), 0
    while streak < quiet_for and time.perf_counter() - t0 < max_wait_s:
        before = machine_busy_cpu_s()
        time.sleep(window_s)
        streak = streak + 1 if (machine_busy_cpu_s() - before) / window_s < threshold else 0
    return time.perf_counter() - t0


def driver_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# -- helpers -----------------------------------------------------------------------------------


def own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


@contextmanager
def timed(into: dict[str, float], key: str, noise: dict[str, float] | None = None,
          cpu: dict[str, float] | None = None) -> Iterator[None]:
    """Wall seconds of the block into ``into[key]``; with ``noise``, also the cores the rest of the
    machine kept busy meanwhile (this process's CPU taken out); with ``cpu``, this process's CPU-seconds."""
    t, busy, own = time.perf_counter(), machine_busy_cpu_s(), own_cpu_s()
    yield
    wall = time.perf_counter() - t
    into[key] = wall
    used = own_cpu_s() - own
    if noise is not None:
        noise[key] = max(0.0, (machine_busy_cpu_s() - busy) - used) / wall if wall else 0.0
    if cpu is not None:
        cpu[key] = used


def cpu_table(cpu: dict[str, dict[str, float]]) -> Any:
    """The rich table of ``{phase: {wall_s, own_cpu_s, other_cores}}`` every bench prints the same way."""
    from rich.table import Table

    table = Table(title="CPU by phase (cores busy on average; 'other' = processes outside this run: noise)")
    for col in ("phase", "seconds", "this run", "other processes"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for phase, c in cpu.items():
        table.add_row(phase, f"{c['wall_s']:.1f}", f"{c['own_cpu_s'] / c['wall_s']:.2f}" if c["wall_s"] else "-",
                      f"{c['other_cores']:.2f}")
    return table
