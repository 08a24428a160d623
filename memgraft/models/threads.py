"""Torch thread count, set explicitly, and numpy's BLAS kept to one thread beside it.

Ray sets OMP_NUM_THREADS=1 inside an actor with num_cpus=1, so torch would
silently run one thread; every model loader calls this instead of trusting it.

Why one BLAS thread where torch runs: numpy's OpenBLAS busy-waits its threads
after each large product (a team's ranking matrix of thousands of rows), and on
a few cores they took the cores torch's models needed. A dense team's ingest at
10,000 memories ran at 0.56 of its speed at 500 with OpenBLAS's default threads,
and at 0.89 with one (``bench/ingest_growth.py``, 2 cores). The products numpy
does here are matrix-vector ones, bound by memory, not by threads.
"""

from __future__ import annotations

import os


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def one_blas_thread() -> None:
    """numpy's (and scipy's) BLAS to one thread in this process; torch's own BLAS is not among them."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def set_torch_threads(threads: int = 0) -> int:
    import torch

    n = threads if threads > 0 else available_cpus()
    torch.set_num_threads(n)
    one_blas_thread()
    return n
