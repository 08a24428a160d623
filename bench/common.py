"""Small measuring helpers the benchmarks share."""

from __future__ import annotations

import os
from typing import Sequence


def machine_busy_cpu_s() -> float:
    """CPU-seconds the whole machine has spent busy (not idle, not waiting on I/O) since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0..1) of ``values``; NaN for none."""
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else float("nan")
