"""Throughput of the Dask executor (``pezo.executor``) against the serial run, and its per-task overhead against
the process pool it replaced (``concurrent.futures.ProcessPoolExecutor``, spawn, one BLAS thread: the code that
was ``golden.zo.sweeps.map_runs``, kept here for the comparison only).

1. Table-3 sweep (``pezo sweep --experiment table3``: five families on Rotten Tomatoes, k = 16, seeds 1..SEEDS,
   STEPS ZO steps of the head) serially and on a LocalCluster of 2 workers: wall time, ratio, results equal.
2. The same sweep with SHORT_STEPS steps (the short runs): wall time on the old pool and on Dask (both with 2
   workers, start-up included and also separately), and the marginal cost per task.

    .venv/bin/python benchmarks/bench_executor.py [--json benchmarks/results/explore/executor.json]

Prints one JSON object; ``--json FILE`` also writes it to FILE, creating its folder.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pezo.executor import SERIAL, open_executor
from pezo.golden.sweep.experiments import _run, jobs_for, run_sweep
from pezo.golden.zo.trainer import TrainConfig

SEEDS = (1, 2, 3, 4)
STEPS = 4000
SHORT_STEPS = 50


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def old_pool_map(run, args, jobs: int, chunksize: int) -> tuple[list, float]:
    """The removed ``map_runs`` (spawned ProcessPoolExecutor); returns (results, start-up seconds)."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    t0 = time.perf_counter()
    pool = ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"), initializer=_ignore_sigint)
    pool.submit(abs, 1).result()  # one worker up
    startup = time.perf_counter() - t0
    try:
        return list(pool.map(run, args, chunksize=chunksize)), startup
    finally:
        pool.shutdown()


def _strip(results):
    return [{k: v for k, v in r.items() if "seconds" not in k} for r in results]


def emit(out: dict, path: Path | None) -> None:
    """Print ``out`` as indented JSON and, given a path, write it there too (creating its folder)."""
    text = json.dumps(out, indent=1)
    print(text)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON object to this file")
    parser.add_argument("--throughput-only", action="store_true", help="part 1 only")
    args = parser.parse_args()
    out = {"seeds": list(SEEDS), "workers": 2, "cores": os.cpu_count()}

    base = TrainConfig(steps=STEPS, eval_every=STEPS // 4)
    # load the model in this process on a split the sweep does not use (seed 99): the serial run then encodes
    # all four of its splits, as the workers do between them
    run_sweep(base.replace(steps=2, eval_every=1), ["table3"], (16,), (99,), progress=False)
    t0 = time.perf_counter()
    serial = run_sweep(base, ["table3"], (16,), SEEDS, progress=False)
    out["serial_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with open_executor(jobs=2) as executor:
        out["dask_startup_s"] = time.perf_counter() - t0
        dask = run_sweep(base, ["table3"], (16,), SEEDS, executor=executor, progress=False)
    out["dask_s"] = time.perf_counter() - t0
    out["runs"] = len(serial)
    out["throughput_ratio"] = out["serial_s"] / out["dask_s"]
    out["identical"] = _strip(serial) == _strip(dask)
    out["load_average_1min"] = os.getloadavg()[0]
    if args.throughput_only:
        emit(out, args.json)
        return

    short = base.replace(steps=SHORT_STEPS, eval_every=SHORT_STEPS)
    todo = [(short, j) for j in jobs_for(["table3"], (16,), SEEDS)]
    chunk = max(1, len(todo) // len(SEEDS))
    t0 = time.perf_counter()
    old, out["short_pool_startup_s"] = old_pool_map(_run, todo, 2, chunk)
    out["short_pool_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with open_executor(jobs=2) as executor:
        out["short_dask_startup_s"] = time.perf_counter() - t0
        new = executor.map(_run, todo, progress=False, chunksize=chunk)
    out["short_dask_s"] = time.perf_counter() - t0
    out["short_runs"] = len(todo)
    out["short_steps"] = SHORT_STEPS
    for name in ("pool", "dask"):
        out[f"short_{name}_per_task_s"] = (out[f"short_{name}_s"] - out[f"short_{name}_startup_s"]) / len(todo)
    out["short_per_task_ratio_dask_over_pool"] = out["short_dask_per_task_s"] / out["short_pool_per_task_s"]
    out["short_total_ratio_dask_over_pool"] = out["short_dask_s"] / out["short_pool_s"]
    out["short_identical"] = _strip(old) == _strip(new) == _strip(SERIAL.map(_run, todo, progress=False))
    emit(out, args.json)


if __name__ == "__main__":
    main()
