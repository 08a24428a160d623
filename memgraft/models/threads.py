"""Torch thread count, set explicitly.

Ray sets OMP_NUM_THREADS=1 inside an actor with num_cpus=1, so torch would
silently run one thread; every model loader calls this instead of trusting it.
"""

from __future__ import annotations

import os


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def set_torch_threads(threads: int = 0) -> int:
    import torch

    n = threads if threads > 0 else available_cpus()
    torch.set_num_threads(n)
    return n
