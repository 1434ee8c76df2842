"""PeZO's Table 3 at millions of trainable weights (issue 58): every perturbation family with the golden MeZO
trainer on ``--trainable last1`` (the last encoder layer + the head, d = 1 775 234 on Rotten Tomatoes), resumable.

    nice -n 19 .venv/bin/python benchmarks/bench_table3_scale.py [--out benchmarks/results/table3-scale]
        [--stop-at HH:MM] [--max-runs N] [--dry-run | --report-only]

The grid is a fixed, ordered plan (``plan``); every run is one ``pezo train ... --json`` subprocess with one BLAS
thread (``OMP_NUM_THREADS`` = ``OPENBLAS_NUM_THREADS`` = ``MKL_NUM_THREADS`` = 1), and its summary, wall time and CPU
time are written to ``--out/runs/<run id>.json`` when it ends (to a temporary name first, then renamed, so a file
is always a complete run). A run whose file exists is skipped, so rerunning the same command continues where the
last session stopped; a run killed part way leaves no file and is redone from step 0. A run the trainer refuses or
that diverges (``pezo train`` exits 1 or 2) is recorded with its ``error`` and counts as done (it is a result: that
lr diverges). Stages, in order (each waits for the ones before it to be complete, as its choices depend on them):

1. ``probe``: the float linear probe on the seed-1 split (L2 chosen on validation; ``golden.sweep.experiments``),
   the reference line (seeds 2 and 3 with stage 5).
2. ``grid-gaussian``: MeZO (gaussian), seed 1, ``LR_GRID`` x ``EPS_GRID[:1]``.
3. ``at-mezo``: every other family, seed 1, at MeZO's chosen (lr, eps).
4. ``grid-families``: every other family (in ``GRID_ORDER``), seed 1, the rest of ``LR_GRID`` at ``EPS_GRID[0]``.
5. ``seeds``: the probe and every family at its own chosen (lr, eps), seeds 2 and 3.
6. ``grid-eps``: every family, seed 1, its chosen lr at the rest of ``EPS_GRID``.

"Chosen" is always by the seed-1 runs' best validation accuracy (``best_val_accuracy``; ties: the smaller lr,
then the smaller eps), never by test. ``--stop-at`` (UTC, HH:MM) starts no run after that time; SIGTERM / SIGINT
stop the running child and leave its run undone. ``--report-only`` writes the tables and curves of the runs on
disk (``table.{md,json,csv}``, ``curves-*.png``) without running anything; every invocation ends with them.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEZO = ROOT / ".venv" / "bin" / "pezo"
PYTHON = ROOT / ".venv" / "bin" / "python"

TASK, SHOTS, TRAINABLE = "rotten_tomatoes", 256, "last1"
STEPS, EVAL_EVERY = 3000, 200
FAMILIES = ("gaussian", "rademacher", "uniform", "naive-int", "pezo-otf", "pezo-pregen")
GRID_ORDER = ("rademacher", "uniform", "pezo-otf", "pezo-pregen", "naive-int")
"""The order of stage 4: the families the paper's collapse question is about first, naive-int (no lr rescues an
eps * z 4 730x MeZO's) last."""
LR_GRID = (1e-5, 3e-5, 1e-4)
EPS_GRID = (1e-3, 1e-4, 1e-2)
SEEDS = (1, 2, 3)
COLLAPSE_POINTS = 5.0
"""As ``golden.sweep.experiments.COLLAPSE_POINTS``: a family collapses when its mean final test accuracy is within
this many points of the best constant prediction on the test split."""
THREADS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

_child: subprocess.Popen | None = None


# -- the plan ---------------------------------------------------------------------------------------


def run_id(run: dict) -> str:
    if run["kind"] == "probe":
        return f"probe-{TASK}-k{SHOTS}-s{run['seed']}"
    return f"{TASK}-k{SHOTS}-{TRAINABLE}-{run['family']}-lr{run['lr']:g}-eps{run['eps']:g}-s{run['seed']}-n{STEPS}"


def train_run(family: str, lr: float, eps: float, seed: int, stage: str) -> dict:
    return {"kind": "train", "stage": stage, "family": family, "lr": lr, "eps": eps, "seed": seed}


def load_runs(out: Path) -> dict:
    """run id -> the recorded run (every complete file in ``out/runs``)."""
    runs = {}
    for path in sorted((out / "runs").glob("*.json")):
        record = json.loads(path.read_text())
        runs[path.stem] = record
    return runs


def chosen(family: str, done: dict):
    """(lr, eps) of ``family``'s seed-1 runs with the best validation accuracy, or None when it has none."""
    best = None
    for record in done.values():
        run = record["run"]
        if run["kind"] != "train" or run["family"] != family or run["seed"] != 1 or "error" in record:
            continue
        key = (record["summary"]["best_val_accuracy"], -run["lr"], -run["eps"])
        if best is None or key > best[0]:
            best = (key, (run["lr"], run["eps"]))
    return None if best is None else best[1]


def plan(done: dict) -> list[dict]:
    """Every run of the stages whose prerequisites are complete, in order (done runs included)."""
    out = [{"kind": "probe", "stage": "probe", "seed": SEEDS[0]}]
    stage = [train_run("gaussian", lr, EPS_GRID[0], 1, "grid-gaussian") for lr in LR_GRID]
    out += stage
    if not all(run_id(r) in done for r in stage):
        return out
    mezo = chosen("gaussian", done)
    stage = [train_run(f, *mezo, 1, "at-mezo") for f in FAMILIES[1:]]
    out += stage
    if not all(run_id(r) in done for r in stage):
        return out
    stage = [train_run(f, lr, EPS_GRID[0], 1, "grid-families") for f in GRID_ORDER for lr in LR_GRID]
    out += stage
    if not all(run_id(r) in done for r in stage):
        return out
    stage = [{"kind": "probe", "stage": "seeds", "seed": seed} for seed in SEEDS[1:]]
    stage += [train_run(f, *chosen(f, done), seed, "seeds") for seed in SEEDS[1:] for f in FAMILIES]
    out += stage
    if not all(run_id(r) in done for r in stage):
        return out
    out += [train_run(f, chosen(f, done)[0], eps, 1, "grid-eps") for f in FAMILIES for eps in EPS_GRID[1:]]
    return out


def next_run(done: dict):
    for run in plan(done):
        if run_id(run) not in done:
            return run
    return None


# -- one run ----------------------------------------------------------------------------------------


PROBE_CODE = """
import json, sys
from pezo.golden.sweep.experiments import probe_reference
from pezo.golden.zo.trainer import TrainConfig
print(json.dumps(probe_reference(TrainConfig(task=sys.argv[1], shots=int(sys.argv[2]), seed=int(sys.argv[3])))))
"""


def command(run: dict) -> list[str]:
    if run["kind"] == "probe":
        return [str(PYTHON), "-c", PROBE_CODE, TASK, str(SHOTS), str(run["seed"])]
    return [
        str(PEZO), "train", "--family", run["family"], "--task", TASK, "--shots", str(SHOTS),
        "--trainable", TRAINABLE, "--steps", str(STEPS), "--eval-every", str(EVAL_EVERY),
        "--lr", f"{run['lr']:g}", "--eps", f"{run['eps']:g}", "--seed", str(run["seed"]), "--quiet", "--json",
    ]  # fmt: skip


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def execute(run: dict, out: Path):
    """Run ``run`` in a subprocess; write and return its record, or None when it was killed (no file)."""
    global _child
    cmd = command(run)
    env = dict(os.environ, **THREADS_ENV)
    started = dt.datetime.now(dt.timezone.utc)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    _child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    stdout, stderr = _child.communicate()
    code, _child = _child.returncode, None
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code < 0:  # killed by a signal: not a result
        return None
    record = {
        "run": run,
        "id": run_id(run),
        "command": " ".join(cmd[:2] + ["<probe_reference>"] + cmd[3:]) if run["kind"] == "probe" else " ".join(cmd),
        "threads": THREADS_ENV,
        "started_utc": started.isoformat(timespec="seconds"),
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
        "load_average_end": os.getloadavg(),
        "pezo_commit": git_commit(),
        "returncode": code,
    }
    warned = [line for line in stderr.splitlines() if line.startswith("pezo: warning")]
    if warned:
        record["warnings"] = warned
    if code == 0:
        record["summary"] = json.loads(stdout)
    else:
        record["error"] = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {code}"
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    tmp = runs / f".{run_id(run)}.tmp"
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.rename(runs / f"{run_id(run)}.json")
    return record


def _stop(signum, frame):
    if _child is not None and _child.poll() is None:
        _child.terminate()
    raise SystemExit(f"stopped by signal {signum}; the running run is left undone")


# -- the report -------------------------------------------------------------------------------------


def constant_accuracy(seed: int) -> float:
    """The best constant prediction's accuracy on the test split of ``seed`` (the majority class's share)."""
    import numpy as np

    from pezo.golden.lm.data import few_shot_split, load_task

    data = load_task(TASK)
    split = few_shot_split(data, SHOTS, seed, test_size=1000)
    counts = np.bincount(data.labels[split.test])
    return float(counts.max() / counts.sum())


def _mean_std(values):
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _cell(values) -> str:
    mean, std = _mean_std([100 * v for v in values])
    if mean is None:
        return "-"
    return f"{mean:.1f}" if std is None else f"{mean:.1f} ± {std:.1f}"


def table_rows(done: dict) -> list[dict]:
    """One row per family at its chosen (lr, eps), over the seeds done there, then the probe."""
    rows = []
    constants = {}
    for family in FAMILIES:
        pick = chosen(family, done)
        if pick is None:
            continue
        recs = [
            r
            for r in done.values()
            if r["run"]["kind"] == "train"
            and r["run"]["family"] == family
            and (r["run"]["lr"], r["run"]["eps"]) == pick
        ]
        recs = sorted([r for r in recs if "summary" in r], key=lambda r: r["run"]["seed"])
        seeds = [r["run"]["seed"] for r in recs]
        for seed in seeds:
            if seed not in constants:
                constants[seed] = constant_accuracy(seed)
        final = [r["summary"]["final_test_accuracy"] for r in recs]
        constant = statistics.fmean(constants[s] for s in seeds)
        grid = sorted(
            (r["run"]["lr"], r["run"]["eps"], r["summary"]["best_val_accuracy"] if "summary" in r else None)
            for r in done.values()
            if r["run"]["kind"] == "train" and r["run"]["family"] == family and r["run"]["seed"] == 1
        )
        rows.append(
            {
                "family": family,
                "lr": pick[0],
                "eps": pick[1],
                "seeds": seeds,
                "best_val_accuracy": [r["summary"]["best_val_accuracy"] for r in recs],
                "test_accuracy": [r["summary"]["test_accuracy"] for r in recs],
                "final_test_accuracy": final,
                "start_accuracy": [r["summary"]["start_accuracy"] for r in recs],
                "best_step": [r["summary"]["best_step"] for r in recs],
                "constant_accuracy": constant,
                "collapsed": 100 * statistics.fmean(final) <= 100 * constant + COLLAPSE_POINTS,
                "seconds_per_step": [r["summary"]["seconds_per_step"] for r in recs],
                "wall_seconds": [r["wall_seconds"] for r in recs],
                "cpu_seconds": [r["cpu_seconds"] for r in recs],
                "trainable_params": recs[0]["summary"]["trainable_params"],
                "seed1_grid": [{"lr": lr, "eps": eps, "best_val_accuracy": v} for lr, eps, v in grid],
            }
        )
    probes = sorted((r for r in done.values() if r["run"]["kind"] == "probe"), key=lambda r: r["run"]["seed"])
    if probes:
        rows.append(
            {
                "family": "float-probe",
                "seeds": [r["run"]["seed"] for r in probes],
                "best_val_accuracy": [r["summary"]["best_val_accuracy"] for r in probes],
                "test_accuracy": [r["summary"]["test_accuracy"] for r in probes],
                "final_test_accuracy": [r["summary"]["test_accuracy"] for r in probes],
                "l2": [r["summary"]["l2"] for r in probes],
            }
        )
    return rows


def write_report(done: dict, out: Path) -> None:
    rows = table_rows(done)
    (out / "table.json").write_text(json.dumps(rows, indent=1) + "\n")
    with (out / "table.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["family", "lr", "eps", "seed", "best_val_accuracy", "test_accuracy", "final_test_accuracy",
             "best_step", "seconds_per_step", "wall_seconds"]
        )  # fmt: skip
        for record in sorted(done.values(), key=lambda r: r["id"]):
            run, s = record["run"], record.get("summary", {})
            if run["kind"] == "probe":
                writer.writerow(
                    ["float-probe", "", "", run["seed"], s.get("best_val_accuracy"), s.get("test_accuracy"),
                     s.get("test_accuracy"), "", "", record["wall_seconds"]]
                )  # fmt: skip
                continue
            writer.writerow(
                [run["family"], run["lr"], run["eps"], run["seed"], s.get("best_val_accuracy"), s.get("test_accuracy"),
                 s.get("final_test_accuracy", record.get("error")), s.get("best_step"), s.get("seconds_per_step"),
                 record["wall_seconds"]]
            )  # fmt: skip
    lines = [
        f"Table 3 at d = {rows[0]['trainable_params'] if rows and 'trainable_params' in rows[0] else '?'} "
        f"({TASK}, k = {SHOTS}, --trainable {TRAINABLE}, {STEPS} steps, batch 16, q = 1; each family at its (lr, eps) "
        "with the best seed-1 validation accuracy; mean ± std over the seeds listed)",
        "",
        "| family | lr | eps | (lr, eps) tried | seeds | best val | test @ best val | final test | collapsed (final "
        f"within {COLLAPSE_POINTS:g} pts of constant) | wall s/step | CPU s/run |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row["family"] == "float-probe":
            lines.append(
                f"| float-probe (L2 on val) | | | | {','.join(map(str, row['seeds']))} "
                f"| {_cell(row['best_val_accuracy'])} | {_cell(row['test_accuracy'])} | | | | |"
            )
            continue
        lines.append(
            f"| {row['family']} | {row['lr']:g} | {row['eps']:g} | {len(row['seed1_grid'])} "
            f"| {','.join(map(str, row['seeds']))} "
            f"| {_cell(row['best_val_accuracy'])} | {_cell(row['test_accuracy'])} "
            f"| {_cell(row['final_test_accuracy'])} "
            f"| {'yes' if row['collapsed'] else 'no'} ({100 * row['constant_accuracy']:.1f}) "
            f"| {statistics.fmean(row['seconds_per_step']):.3f} | {statistics.fmean(row['cpu_seconds']):.0f} |"
        )
    lines += ["", "Seed-1 grid (best validation accuracy; `div` = diverged or refused):", ""]
    lines += [
        "| family | lr | eps | best val | test @ best val | final test | best step | wall s | CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for record in sorted(done.values(), key=lambda r: r["id"]):
        run = record["run"]
        if run["kind"] != "train" or run["seed"] != 1:
            continue
        s = record.get("summary")
        if s is None:
            lines.append(
                f"| {run['family']} | {run['lr']:g} | {run['eps']:g} | div | div | div | "
                f"| {record['wall_seconds']:.0f} | {record['cpu_seconds']:.0f} |"
            )
        else:
            lines.append(
                f"| {run['family']} | {run['lr']:g} | {run['eps']:g} | {100 * s['best_val_accuracy']:.1f} "
                f"| {100 * s['test_accuracy']:.1f} | {100 * s['final_test_accuracy']:.1f} | {s['best_step']} "
                f"| {record['wall_seconds']:.0f} | {record['cpu_seconds']:.0f} |"
            )
    (out / "table.md").write_text("\n".join(lines) + "\n")
    plot_curves(done, rows, out)


def plot_curves(done: dict, rows: list[dict], out: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def curve(record):
        steps, vals = zip(*record["summary"]["val_history"], strict=True)
        return steps, [100 * v for v in vals]

    # every family at its chosen (lr, eps), seed 1
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for row in rows:
        if row["family"] == "float-probe":
            ax.axhline(100 * statistics.fmean(row["best_val_accuracy"]), color="k", ls="--", lw=1, label="float probe")
            continue
        for record in done.values():
            run = record["run"]
            if (
                run["kind"] == "train"
                and run["family"] == row["family"]
                and run["seed"] == 1
                and (run["lr"], run["eps"]) == (row["lr"], row["eps"])
            ):
                ax.plot(*curve(record), label=f"{row['family']} lr {row['lr']:g} eps {row['eps']:g}")
    ax.set_xlabel("ZO step")
    ax.set_ylabel("validation accuracy (%)")
    ax.set_title(f"{TASK} k={SHOTS}, --trainable {TRAINABLE}, seed 1")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "curves-families.png", dpi=120)
    plt.close(fig)
    # every seed-1 run, one panel per family
    families = [f for f in FAMILIES if any(r["run"].get("family") == f and "summary" in r for r in done.values())]
    if not families:
        return
    cols = 3
    fig, axes = plt.subplots(math.ceil(len(families) / cols), cols, figsize=(12, 3.6 * math.ceil(len(families) / cols)),
                             squeeze=False)  # fmt: skip
    for ax, family in zip(axes.flat, families, strict=False):
        for record in sorted(done.values(), key=lambda r: r["id"]):
            run = record["run"]
            if run["kind"] == "train" and run["family"] == family and run["seed"] == 1 and "summary" in record:
                ax.plot(*curve(record), label=f"lr {run['lr']:g} eps {run['eps']:g}")
        ax.set_title(family)
        ax.set_xlabel("ZO step")
        ax.set_ylabel("val acc (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(families) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out / "curves-grid.png", dpi=110)
    plt.close(fig)


# -- main -------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "table3-scale")
    p.add_argument("--stop-at", help="UTC HH:MM after which no run starts")
    p.add_argument("--max-runs", type=int, help="start at most this many runs")
    p.add_argument("--dry-run", action="store_true", help="print the next run's command and stop")
    p.add_argument("--report-only", action="store_true", help="write the tables and curves of the runs on disk")
    args = p.parse_args(argv)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    stop = None
    if args.stop_at:
        hour, minute = map(int, args.stop_at.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        stop = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if stop < now - dt.timedelta(hours=12):
            stop += dt.timedelta(days=1)
    started = 0
    while not args.report_only:
        done = load_runs(out)
        run = next_run(done)
        if run is None:
            print("every run of the plan is done", flush=True)
            break
        if args.dry_run:
            print(run_id(run), " ".join(command(run)))
            return 0
        if stop is not None and dt.datetime.now(dt.timezone.utc) >= stop:
            print(f"--stop-at {args.stop_at} reached; next would be {run_id(run)}", flush=True)
            break
        if args.max_runs is not None and started >= args.max_runs:
            break
        started += 1
        print(f"{dt.datetime.now(dt.timezone.utc):%H:%M:%S} start {run_id(run)} ({run['stage']})", flush=True)
        record = execute(run, out)
        if record is None:
            print("run killed; left undone", flush=True)
            break
        result = record.get("error") or (
            f"best val {record['summary']['best_val_accuracy']:.4f} test {record['summary']['test_accuracy']:.4f}"
        )
        now = dt.datetime.now(dt.timezone.utc)
        print(f"{now:%H:%M:%S} done {run_id(run)} {record['wall_seconds']:.0f} s: {result}", flush=True)
    write_report(load_runs(out), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
