"""The resumable driver of issue 58's Table 3 at scale (``benchmarks/bench_table3_scale.py``): its plan, its choices
on validation, and that a run is recorded only when it ended (a killed run leaves no file and is redone)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_table3_scale.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_table3_scale", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _done(bench, runs: list[dict], vals: list[float | None]) -> dict:
    out = {}
    for run, val in zip(runs, vals, strict=True):
        record = {"run": run, "id": bench.run_id(run), "wall_seconds": 1.0}
        if val is None:
            record["error"] = "diverged"
        else:
            record["summary"] = {"best_val_accuracy": val}
        out[bench.run_id(run)] = record
    return out


def test_the_plan_starts_with_the_probe_and_mezo_grid_and_waits_for_it(bench):
    plan = bench.plan({})
    assert plan[0]["kind"] == "probe"
    assert [(r["family"], r["lr"]) for r in plan[1:]] == [("gaussian", lr) for lr in bench.LR_GRID]
    assert bench.next_run({})["kind"] == "probe"


def test_the_other_families_run_at_mezos_choice_by_validation(bench):
    grid = [r for r in bench.plan({}) if r["kind"] == "train"]
    vals = [0.6, 0.7, 0.7][: len(grid)]  # a tie: the smaller lr wins
    done = _done(bench, grid, vals)
    assert bench.chosen("gaussian", done) == (bench.LR_GRID[1], bench.EPS_GRID[0])
    at_mezo = [r for r in bench.plan(done) if r["stage"] == "at-mezo"]
    assert [r["family"] for r in at_mezo] == list(bench.FAMILIES[1:])
    assert {(r["lr"], r["eps"], r["seed"]) for r in at_mezo} == {(bench.LR_GRID[1], bench.EPS_GRID[0], 1)}
    assert bench.next_run(done)["kind"] == "probe"  # the probe is not done yet
    probe = {"kind": "probe", "stage": "probe", "seed": 1}
    done[bench.run_id(probe)] = {"run": probe, "summary": {}}
    assert bench.next_run(done)["stage"] == "at-mezo"


def test_a_diverged_run_is_done_but_never_chosen(bench):
    grid = [r for r in bench.plan({}) if r["kind"] == "train"]
    done = _done(bench, grid, [0.55, None, None][: len(grid)])
    assert bench.chosen("gaussian", done) == (bench.LR_GRID[0], bench.EPS_GRID[0])
    assert bench.chosen("uniform", done) is None


def test_a_run_is_written_when_it_ends_and_a_killed_run_leaves_nothing(bench, tmp_path, monkeypatch):
    run = bench.train_run("gaussian", 1e-5, 1e-3, 1, "grid-gaussian")
    ok = [sys.executable, "-c", "import json; print(json.dumps({'best_val_accuracy': 0.5}))"]
    monkeypatch.setattr(bench, "command", lambda run: ok)
    record = bench.execute(run, tmp_path)
    path = tmp_path / "runs" / f"{bench.run_id(run)}.json"
    assert json.loads(path.read_text())["summary"] == {"best_val_accuracy": 0.5} == record["summary"]
    assert record["wall_seconds"] >= 0 and record["cpu_seconds"] >= 0
    assert bench.load_runs(tmp_path).keys() == {bench.run_id(run)}

    failed = bench.train_run("gaussian", 1e-4, 1e-3, 1, "grid-gaussian")
    err = [sys.executable, "-c", "import sys; print('pezo: warning: w', file=sys.stderr); sys.exit('pezo: diverged')"]
    monkeypatch.setattr(bench, "command", lambda run: err)
    record = bench.execute(failed, tmp_path)
    assert record["error"] == "pezo: diverged" and record["warnings"] == ["pezo: warning: w"]

    killed = bench.train_run("gaussian", 3e-5, 1e-3, 1, "grid-gaussian")
    kill = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    monkeypatch.setattr(bench, "command", lambda run: kill)
    assert bench.execute(killed, tmp_path) is None
    assert bench.run_id(killed) not in bench.load_runs(tmp_path)
    assert not list((tmp_path / "runs").glob(".*.tmp"))
