"""The golden model's own threads: as many as BLAS may use, for work NumPy runs with the GIL released.

Contract: ``blas_threads()`` is the thread count BLAS may use now (threadpoolctl: it follows
``threadpool_limits`` and the ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` variables), at least 1, so a caller
that runs BLAS on one thread (the executor's workers, ``OPENBLAS_NUM_THREADS=1``) also runs this work on one.
``run_all(tasks, threads)`` calls every task and returns their results in order, on ``threads`` threads of one
shared pool per count (on the calling thread when ``threads`` is 1); a task's exception is raised here. Only
tasks whose results do not depend on which thread runs them (element-wise NumPy work on disjoint data) belong
here, so results are the same for any thread count.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor


@functools.lru_cache(maxsize=1)
def _controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def blas_threads() -> int:
    """The threads BLAS may use now, at least 1 (1 when no BLAS library is loaded)."""
    counts = [lib.num_threads for lib in _controller().lib_controllers if lib.user_api == "blas"]
    return max(1, min(counts, default=1))


@functools.lru_cache(maxsize=4)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pezo-golden")


def run_all(tasks: Sequence[Callable[[], object]], threads: int) -> list:
    """Every task's result, in order, computed on ``threads`` threads."""
    if threads <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    return [future.result() for future in [_pool(threads).submit(task) for task in tasks]]
