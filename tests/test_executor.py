"""pezo.executor: the Dask path gives the serial run's results, a dead worker loses nothing, a scheduler that
does not answer is one clear error within the timeout."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pezo.executor import (
    SERIAL,
    SchedulerUnreachable,
    catch_interrupts,
    check_address,
    interrupted,
    interrupts_deferred,
    open_executor,
)
from pezo.golden.methods.base import MethodConfig
from pezo.golden.sweep.methods import _run, jobs_for, run_methods


def _strip(results):
    """Everything but wall-clock times."""
    return [{k: v for k, v in r.items() if "seconds" not in k} for r in results]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_local_cluster_gives_the_serial_results():
    base = MethodConfig(steps=60, eval_every=30)
    serial = run_methods(base, ["mezo", "poormans"], ["digits"], [1, 2], progress=False)
    with open_executor(jobs=2) as executor:
        assert executor.client is not None and executor.workers == 2
        dask = run_methods(base, ["mezo", "poormans"], ["digits"], [1, 2], executor=executor, progress=False)
    assert _strip(dask) == _strip(serial)


def test_serial_executor_keeps_order_and_raises():
    assert SERIAL.map(abs, [-3, 2, -1], progress=False) == [3, 2, 1]
    with pytest.raises(TypeError):
        SERIAL.map(abs, ["x"], progress=False)
    with open_executor(jobs=1) as executor:
        assert executor is SERIAL


@pytest.mark.parametrize(
    "address", ["127.0.0.1:8786", "tcp://host", "tcp://host:0", "tcp://host:70000", "http://host:8786", "tcp://a b:1"]
)
def test_bad_scheduler_addresses(address):
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        check_address(address)


def test_unreachable_scheduler_fails_within_the_timeout():
    address = f"tcp://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    with pytest.raises(SchedulerUnreachable, match=f"scheduler {address}: no Dask scheduler answered within 1 s"):
        with open_executor(scheduler=address, timeout=1):
            pass
    assert time.monotonic() - start < 8


def _dask(*args, log: Path) -> subprocess.Popen:
    """``dask ARGS`` from this venv, its output in ``log``, in its own process group."""
    dask = Path(sys.executable).parent / "dask"
    return subprocess.Popen(
        [str(dask), *args],
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def test_a_worker_killed_mid_sweep_loses_nothing(tmp_path):
    """A real ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1; one worker is killed (SIGKILL)
    after the first result: the scheduler re-runs its tasks on the other, and the results equal the serial run's."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [
        _dask("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard", log=tmp_path / "scheduler.log")
    ]
    try:
        time.sleep(1.0)
        for i in range(2):
            procs.append(
                _dask(
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    "--name",
                    f"w{i}",
                    log=tmp_path / f"worker{i}.log",
                )
            )
        base = MethodConfig(steps=150, eval_every=50)
        todo = jobs_for(["mezo", "poormans"], ["digits"], [1, 2, 3], 3)
        args = [(base, j) for j in todo]
        with open_executor(scheduler=address, timeout=30) as executor:
            executor.client.wait_for_workers(2, timeout=30)
            results: list = [None] * len(args)
            killed_after = None
            for done, (i, result) in enumerate(executor.imap(_run, args), start=1):
                results[i] = result
                if killed_after is None:
                    busy = sum(1 for keys in executor.client.processing().values() if keys)
                    procs[1].send_signal(signal.SIGKILL)  # worker w0, running a task (both are busy)
                    procs[1].wait(timeout=10)
                    killed_after = done
            alive = len(executor.client.scheduler_info()["workers"])
        assert killed_after == 1 and busy == 2 and alive == 1, (killed_after, busy, alive)
        serial = SERIAL.map(_run, args, progress=False)
        assert _strip(results) == _strip(serial)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.synth
def test_report_table_rows_on_a_local_cluster_equal_the_serial_rows():
    """pezo report's designs are tasks too: the rows (in design order) do not depend on the executor."""
    from pezo.boards.flow.comparison_rows import Design, comparison_rows
    from pezo.golden.config import PerturbConfig

    designs = [
        Design(PerturbConfig(n_rngs=7, rng_bits=5)),
        Design(PerturbConfig(strategy="gaussian", lanes=1)),
        Design(PerturbConfig(strategy="pregen", pool_size=255, lanes=4, banks=4), "stream"),
    ]
    serial = comparison_rows(designs)
    with open_executor(jobs=2) as executor:
        assert comparison_rows(designs, executor=executor) == serial
    assert [r["strategy"] for r in serial] == ["otf", "gaussian", "pregen"]


def test_report_table_starts_the_longest_designs_first_and_keeps_the_rows_in_order(monkeypatch):
    """Cold ``make run``: the trainer tops and the streams with activity go first, so the small generators fill the
    two workers at the end; the rows still come in design order."""
    from pezo.boards.flow import comparison_rows as comparison

    started = []
    monkeypatch.setattr(comparison, "_design_rows", lambda job: started.append(job[0].name) or [job[0].name])
    designs = comparison.comparison_designs()
    rows = comparison.comparison_rows(designs, activity=True)
    assert rows == [d.name for d in designs]
    costs = [comparison.expected_seconds(d, activity=True) for d in designs]
    assert [comparison.expected_seconds(next(d for d in designs if d.name == n), True) for n in started] == sorted(
        costs, reverse=True
    )
    assert {d.unit for d in designs if d.name in started[:5]} == {"board", "stream"}


def test_a_ctrl_c_waits_for_the_end_of_a_deferred_block():
    """``interrupts_deferred``: SIGINT inside the block lets the block finish, then raises; the handler of
    ``catch_interrupts`` is back afterwards (what keeps an Optuna ask or tell whole in ``pezo explore``)."""
    finished = []
    try:
        with catch_interrupts():
            with pytest.raises(KeyboardInterrupt):
                with interrupts_deferred():
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.05)  # the handler runs between bytecodes: here, inside the block
                    finished.append(True)
            assert finished == [True] and interrupted()
            with pytest.raises(KeyboardInterrupt):  # the previous handler raises at once again
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
    finally:
        with catch_interrupts():  # clears the flag: later tests' raise_if_interrupted must not see this Ctrl-C
            pass
    assert not interrupted()
