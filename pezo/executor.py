"""The one executor every parallel pezo command runs on: ``dask.distributed``, or in-process.

``open_executor(jobs, scheduler)`` is a context manager yielding an ``Executor``:

* ``scheduler`` given (``tcp://HOST:PORT``): a ``Client`` of that existing Dask cluster (``dask scheduler`` +
  ``dask worker``, or dask-jobqueue's ``SLURMCluster``); ``SchedulerUnreachable`` when nothing answers, or no
  worker joins, within ``timeout`` seconds (default ``$PEZO_SCHEDULER_TIMEOUT`` or 10; a value that is not a
  number > 0 is a ValueError naming the variable).
* else ``jobs`` > 1 (default: the machine's cores): a ``LocalCluster`` of ``jobs`` worker processes, one
  thread and one BLAS thread each (Dask's nanny sets ``OMP_NUM_THREADS=1`` etc.), the dashboard on a free port, no
  memory limit, Dask's own logging silenced below ERROR.
* else (``jobs == 1``): the calls run in this process, in order (``Executor(None)``).

``Executor.imap(run, args)`` yields ``(index, run(args[index]))`` as runs finish; ``Executor.map`` returns
``[run(a) for a in args]`` in order, with a tqdm bar on stderr. ``chunksize`` consecutive runs form one task
(one worker walks them in order and reuses its caches). Results do not depend on the executor: each run is a
pure function of its argument (callers seed every run), and every run, in-process too, sees one BLAS thread
(threadpoolctl), so the floating-point sums are the same everywhere. A worker that dies mid-run loses nothing: the
scheduler re-runs its tasks elsewhere. Leaving the context (normally, on an exception or on Ctrl-C's
``KeyboardInterrupt``) cancels what is still queued and closes the client and a local cluster, which stops
its worker processes. This module imports nothing of pezo (the lowest layer: every package may use it).

Ctrl-C is also remembered (``catch_interrupts``, which the ``pezo`` command installs): a ``KeyboardInterrupt``
raised while Python runs a finaliser (an SQLAlchemy weakref callback inside Optuna, a ``__del__``) is printed
as "Exception ignored" and swallowed, and the command would go on. Long loops and every output commit call
``raise_if_interrupted()``, so a swallowed interrupt still stops the command before it writes anything.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator

ADDRESS = re.compile(r"(tcp|tls)://(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")
DEFAULT_TIMEOUT = 10.0


_INTERRUPTED = threading.Event()


def _on_sigint(signum, frame) -> None:
    _INTERRUPTED.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def catch_interrupts() -> Iterator[None]:
    """Within the block, SIGINT sets the interrupt flag and raises ``KeyboardInterrupt`` (Python's default
    raise, plus the flag); the previous handler is restored on exit. Outside the main thread: only clears the flag."""
    _INTERRUPTED.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Within the block SIGINT only sets the interrupt flag; on leaving it normally, ``KeyboardInterrupt`` if
    Ctrl-C arrived. For writes a Ctrl-C must not cut in half (an Optuna trial created in the storage but not yet
    returned to its caller, so nobody can mark it FAIL). Outside the main thread: a plain block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: _INTERRUPTED.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    raise_if_interrupted()


def interrupted() -> bool:
    """Ctrl-C arrived inside ``catch_interrupts`` (whether or not its ``KeyboardInterrupt`` was swallowed)."""
    return _INTERRUPTED.is_set()


def raise_if_interrupted() -> None:
    """``KeyboardInterrupt`` if Ctrl-C arrived inside ``catch_interrupts`` (its own raise may have been swallowed)."""
    if _INTERRUPTED.is_set():
        raise KeyboardInterrupt


class SchedulerUnreachable(ConnectionError):
    """``--scheduler`` names no Dask scheduler that answers (or one without workers) within the timeout."""


def check_address(address: str) -> str:
    """``address`` if it has the form ``tcp://HOST:PORT`` (or ``tls://``) with a port in 1..65535, else ValueError."""
    match = ADDRESS.fullmatch(str(address).strip())
    if not match or not 1 <= int(match.group(3)) <= 65535:
        raise ValueError(f"scheduler must be a Dask scheduler address tcp://HOST:PORT (port 1..65535), got {address!r}")
    return match.group(0)


def seconds_from_env(variable: str, default: float) -> float:
    """``$variable`` as seconds (unset or empty: ``default``); ValueError naming the variable unless it is a
    finite number > 0."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{variable} must be a finite number of seconds > 0 (unset: {default:g}), got {text!r}")
    return value


def scheduler_timeout() -> float:
    """Seconds to wait for a scheduler and its first worker: ``$PEZO_SCHEDULER_TIMEOUT`` (unset or empty: 10);
    ValueError naming the variable unless it is a finite number > 0."""
    return seconds_from_env("PEZO_SCHEDULER_TIMEOUT", DEFAULT_TIMEOUT)


def _run_chunk(run: Callable, chunk: list) -> list:
    """The runs of one task, each with one BLAS thread (so a result never depends on where it ran)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return [run(a) for a in chunk]


class Executor:
    """Runs ``run(a)`` for every ``a`` on a Dask client (``client``) or in this process (``client=None``)."""

    def __init__(self, client=None, description: str = "in-process"):
        self.client = client
        self.description = description

    @property
    def workers(self) -> int:
        """Worker threads of the cluster right now (1 in-process): how many runs can go at once."""
        if self.client is None:
            return 1
        info = self.client.scheduler_info()["workers"]
        return max(1, sum(w.get("nthreads", 1) for w in info.values()))

    def imap(self, run: Callable, args: Iterable, chunksize: int = 1) -> Iterator[tuple[int, object]]:
        """``(i, run(args[i]))`` for every i, in completion order (in-process: in order). An exception of a
        run propagates (after cancelling the remaining runs)."""
        args = list(args)
        if self.client is None:
            for i, a in enumerate(args):
                yield i, _run_chunk(run, [a])[0]
            return
        from distributed import as_completed

        size = max(1, int(chunksize))
        starts = {}
        futures = []
        for start in range(0, len(args), size):
            future = self.client.submit(_run_chunk, run, args[start : start + size], pure=False)
            starts[future.key] = start
            futures.append(future)
        try:
            for future in as_completed(futures, loop=self.client.loop):
                start = starts[future.key]
                for offset, result in enumerate(future.result()):
                    yield start + offset, result
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def map(self, run: Callable, args: Iterable, progress: bool = True, desc: str = "runs", chunksize: int = 1) -> list:
        """``[run(a) for a in args]`` (in order), with a progress bar on stderr when ``progress``."""
        args = list(args)
        results: list = [None] * len(args)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(args), desc=desc, unit="run", file=sys.stderr)
        try:
            for i, result in self.imap(run, args, chunksize):
                results[i] = result
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return results


SERIAL = Executor(None)
"""Runs in this process, in order."""


def _quiet_dask_logs() -> None:
    import logging

    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _close_half_started_clusters() -> None:
    """Close, quietly, a local cluster whose construction was interrupted (its workers may still be starting).
    Left alone, distributed's own exit hook closes it and prints a traceback when a worker is still in its
    ``init`` state, so the hook is unregistered once this has run."""
    import atexit

    from distributed.deploy import spec

    for cluster in list(spec.SpecCluster._instances):
        with contextlib.suppress(Exception):
            cluster.close(timeout=10)
    atexit.unregister(spec.close_clusters)


@contextlib.contextmanager
def open_executor(
    jobs: int | None = None, scheduler: str | None = None, timeout: float | None = None
) -> Iterator[Executor]:
    """The executor of ``jobs`` local worker processes, of the cluster at ``scheduler``, or in-process
    (module docstring); closed (workers stopped, queued runs cancelled) when the block ends in any way."""
    if scheduler is not None:
        address = check_address(scheduler)
        timeout = scheduler_timeout() if timeout is None else timeout
        _quiet_dask_logs()
        from distributed import Client

        try:
            client = Client(address, timeout=f"{timeout}s", set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise SchedulerUnreachable(
                f"scheduler {address}: no Dask scheduler answered within {timeout:g} s "
                f"({type(exc).__name__}); start one (dask scheduler; dask worker "
                f"{address}) or omit --scheduler for a local cluster"
            ) from None
        try:
            try:
                client.wait_for_workers(1, timeout=timeout)
            except (OSError, TimeoutError):
                raise SchedulerUnreachable(
                    f"scheduler {address} answered but no worker joined within {timeout:g} "
                    f"s; start one (dask worker {address})"
                ) from None
            yield Executor(client, f"Dask scheduler {address}")
        finally:
            client.close()
        return
    jobs = (os.cpu_count() or 1) if jobs is None else int(jobs)
    if jobs <= 1:
        yield SERIAL
        return
    import logging

    _quiet_dask_logs()
    from distributed import Client, LocalCluster

    try:
        cluster = LocalCluster(
            n_workers=jobs,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            memory_limit=0,
            silence_logs=logging.CRITICAL,
        )
    except BaseException:  # e.g. Ctrl-C while the workers start
        _close_half_started_clusters()
        raise
    try:
        client = Client(cluster, set_as_default=False)
        try:
            yield Executor(client, f"local Dask cluster of {jobs} worker processes")
        finally:
            client.close()
    finally:
        try:
            cluster.close()
        except Exception:  # a worker still starting (interrupted early): close what is left, quietly
            _close_half_started_clusters()
