"""numpy's BLAS runs one thread once a model loader has set torch's threads (memgraft/models/threads.py)."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from memgraft.models.threads import available_cpus, set_torch_threads


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_torch_gets_the_cores_and_numpy_blas_one_thread():
    import torch

    np.ones((4, 4)) @ np.ones(4)  # numpy's BLAS is loaded
    with threadpool_limits(limits=None):  # whatever the process had: restored after the test
        before = torch.get_num_threads()
        try:
            assert set_torch_threads() == available_cpus() == torch.get_num_threads()
            assert _blas_threads() and all(n == 1 for n in _blas_threads())
        finally:
            torch.set_num_threads(before)
