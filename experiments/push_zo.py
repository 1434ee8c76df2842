"""Push golden float MeZO toward the float linear probe (issue 17): more steps, q > 1, the probe as the
starting head, lr / eps chosen on validation only. Rotten Tomatoes, k = 256 shots per class, the linear
head on frozen all-MiniLM-L6-v2 embeddings (``pezo.golden.zo.trainer``), gaussian family.
Question: what closes the 4.9-point gap between float MeZO of the head and the probe? Answer: forward passes,
not q: at equal passes q = 1 / 4 / 16 are level (71.5 / 71.9 / 71.7 % at 32 000), q = 1 x 64 000 steps reaches
73.4 % (gap 1.1) and more steps stop helping; the probe as the starting head keeps the probe's accuracy but
does not improve on it (74.4 %). Results: ``benchmarks/results/push-zo/`` (about 15 minutes on 2 cores). Command:

    .venv/bin/python experiments/push_zo.py [--seeds 1,2,3] [--force] [--out benchmarks/results/push-zo]

Stages (every choice on the few-shot validation split; test is reported, never used to choose):

1. ``grid``: lr in ``LR_GRID`` x eps in ``EPS_GRID`` at q = 1, 4 000 steps, head from zeros. The cell with
   the highest mean (over seeds) best-validation accuracy is chosen (ties: the cell nearest the trainer's
   defaults in log lr, then log eps). While the chosen lr is at an edge of the grid, the grid gains the next
   ``LR_LADDER`` value past that edge (all eps; at most ``MAX_EXTENSIONS`` times).
2. With the chosen lr / eps (``CONFIGS``): q = 1 at 4 000, 16 000, 64 000 and 256 000 steps; q = 4 at
   4 000 and 16 000; q = 16 at 1 000 -- so q = 1 x 16 000, q = 4 x 4 000 and q = 16 x 1 000 all cost 32 000
   forward passes (and q = 1 x 64 000 / q = 4 x 16 000 128 000) -- and ``head_init="probe"`` (the probe with its L2
   chosen on validation) at q = 1 and q = 4, 4 000 steps.
3. ``probe-lr``: the probe start at q = 1, 4 000 steps with the chosen eps and the chosen lr or the two
   ``LR_LADDER`` values below it (the probe start is already a fit; smaller steps may keep it), the lr chosen
   by mean best-validation accuracy (ties: the larger lr).

Validation is evaluated every ``EVAL_PASSES`` forward passes (eval_every = EVAL_PASSES / (2 q) steps), so
runs of equal forward passes pick their checkpoint among the same number of candidates. The reference is
the float probe on the same shots with L2 chosen on validation (``fit_linear_probe_val``), cached as
``runs/probe-s<seed>.json``. Every run's summary is cached in ``--out/runs/`` (``--force`` re-runs).
Writes ``table.{md,json,csv}`` and ``curves.png`` (validation accuracy against forward passes).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.golden.zo.trainer import TrainConfig, ZOTask, train  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

BASE = TrainConfig(family="gaussian", task="rotten_tomatoes", shots=256, steps=4000)
LR_LADDER = (5e-7, 1.5e-6, 5e-6, 1.5e-5, 5e-5, 1.5e-4, 5e-4, 1.5e-3)  # half decades
LR_GRID = (1.5e-5, 5e-5, 1.5e-4)  # the default 5e-5 and its ladder neighbours
EPS_GRID = (1e-4, 1e-3, 1e-2)  # the default 1e-3, x 1/10, x 10
MAX_EXTENSIONS = 3  # the lr grid grows by one ladder step past whichever edge the choice lands on
EVAL_PASSES = 800
# name: (queries, steps, head_init); lr / eps are the grid's choice
CONFIGS = {
    "q1-4k": (1, 4000, "zeros"),
    "q1-16k": (1, 16000, "zeros"),
    "q4-4k": (4, 4000, "zeros"),
    "q16-1k": (16, 1000, "zeros"),
    "q1-64k": (1, 64000, "zeros"),
    "q4-16k": (4, 16000, "zeros"),
    "q1-256k": (1, 256000, "zeros"),
    "probe-q1-4k": (1, 4000, "probe"),
    "probe-q4-4k": (4, 4000, "probe"),
}
MAIN_CURVES = ("q1-256k", "q4-16k", "q16-1k", "probe-q1-4k", "probe-q4-4k")  # distinct trajectories
COLUMNS = (
    "config",
    "seed",
    "queries",
    "steps",
    "lr",
    "eps",
    "head_init",
    "head_init_l2",
    "forward_passes",
    "best_step",
    "best_val_accuracy",
    "test_accuracy",
    "final_test_accuracy",
    "probe_test_accuracy",
    "gap_points",
    "gap_final_points",
    "wall_seconds",
)


def config_for(queries: int, steps: int, init: str, lr: float, eps: float, seed: int) -> TrainConfig:
    return BASE.replace(
        queries=queries, steps=steps, head_init=init, lr=lr, eps=eps, seed=seed, eval_every=EVAL_PASSES // (2 * queries)
    )


def run_name(c: TrainConfig) -> str:
    return f"q{c.queries}-n{c.steps}-lr{c.lr:g}-eps{c.eps:g}-{c.head_init}-s{c.seed}"


def run(c: TrainConfig, out: Path, force: bool) -> dict:
    path = out / "runs" / f"{run_name(c)}.json"
    if path.exists() and not force:
        return json.loads(path.read_text())
    t0 = time.perf_counter()
    s = train(c).summary
    s["wall_seconds"] = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(s, indent=1, default=float))
    print(
        f"  {run_name(c)}: best val {s['best_val_accuracy']:.3f} test {s['test_accuracy']:.3f} "
        f"final {s['final_test_accuracy']:.3f} ({s['wall_seconds']:.0f} s)",
        flush=True,
    )
    return s


def probe(seed: int, out: Path, force: bool) -> dict:
    """The float probe (L2 on validation) on the seed's split: the ``head_init="probe"`` start, scored."""
    path = out / "runs" / f"probe-s{seed}.json"
    if path.exists() and not force:
        return json.loads(path.read_text())
    task = ZOTask(BASE.replace(seed=seed, head_init="probe"))
    r = {
        "seed": seed,
        "l2": task.head_init_l2,
        "val_accuracy": task.accuracy(task.split.val, task.params),
        "test_accuracy": task.accuracy(task.split.test, task.params),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r, indent=1))
    return r


def choose(grid: dict, tie_key):
    """The cell with the highest mean best-validation accuracy (ties: the smallest ``tie_key(cell)``)."""
    means = {cell: float(np.mean([s["best_val_accuracy"] for s in runs])) for cell, runs in grid.items()}
    best = max(means.values())
    return min((cell for cell, m in means.items() if m == best), key=tie_key), means


def near_default(cell) -> tuple:
    lr, eps = cell
    return abs(np.log(lr / BASE.lr)), abs(np.log(eps / BASE.eps))


def row(name: str, s: dict, probe_test: float) -> dict:
    c = s["config"]
    r = {
        "config": name,
        "seed": s["seed"],
        "queries": c["queries"],
        "steps": s["steps"],
        "lr": c["lr"],
        "eps": c["eps"],
        "head_init": c["head_init"],
        "head_init_l2": s.get("head_init_l2"),
        "forward_passes": s["forward_passes"],
        "best_step": s["best_step"],
        "best_val_accuracy": round(s["best_val_accuracy"], 4),
        "test_accuracy": round(s["test_accuracy"], 4),
        "final_test_accuracy": round(s["final_test_accuracy"], 4),
        "probe_test_accuracy": round(probe_test, 4),
        "gap_points": round(100 * (probe_test - s["test_accuracy"]), 2),
        "gap_final_points": round(100 * (probe_test - s["final_test_accuracy"]), 2),
        "wall_seconds": round(s.get("wall_seconds", 0.0), 1),
    }
    return r


def mean_row(name: str, rows: list[dict]) -> dict:
    m = {k: rows[0][k] for k in ("config", "queries", "steps", "lr", "eps", "head_init", "forward_passes")}
    m.update(config=name, seed="mean", runs=len(rows))
    for k in (
        "best_val_accuracy",
        "test_accuracy",
        "final_test_accuracy",
        "probe_test_accuracy",
        "gap_points",
        "gap_final_points",
    ):
        m[k] = round(float(np.mean([r[k] for r in rows])), 4)
    m["gap_min"] = min(r["gap_points"] for r in rows)
    m["gap_max"] = max(r["gap_points"] for r in rows)
    return m


def plot(curves: dict, probe_val: float, path: Path) -> None:
    """Left: runs from zeros (log forward passes, from the first evaluation); right: runs from the probe."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), gridspec_kw={"width_ratios": [3, 2]})
    for name, summaries in curves.items():
        probe_start = summaries[0]["config"]["head_init"] == "probe"
        ax = axes[1] if probe_start else axes[0]
        xs = np.array([2 * summaries[0]["config"]["queries"] * st for st, _ in summaries[0]["val_history"]])
        ys = np.array([[v for _, v in s["val_history"]] for s in summaries])
        keep = xs > 0 if not probe_start else xs >= 0
        (line,) = ax.plot(xs[keep], ys.mean(axis=0)[keep], label=f"{name} ({len(ys)} seeds)", lw=1.2)
        ax.fill_between(xs[keep], ys.min(axis=0)[keep], ys.max(axis=0)[keep], color=line.get_color(), alpha=0.10)
    for ax in axes:
        ax.axhline(probe_val, color="k", ls=":", label="float probe, L2 on val (its val accuracy, mean)")
        ax.set_xlabel("forward passes (2 q per step)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_xscale("log")
    axes[0].set_ylabel("validation accuracy (mean over seeds, min-max band)")
    axes[0].set_title("from zeros (q = 1 runs of 4k/16k/64k steps are prefixes of q1-256k)", fontsize=9)
    axes[1].set_title("from the probe (L2 on val)", fontsize=9)
    fig.suptitle("Golden float MeZO (gaussian), linear head on MiniLM, Rotten Tomatoes k=256", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def fmt_sci(x: float) -> str:
    return f"{x:g}"


def write(
    out: Path,
    seeds,
    lrs,
    grid_means: dict,
    chosen: tuple,
    probe_means: dict,
    probe_lr: float,
    rows: list[dict],
    means: list[dict],
    probes: dict,
) -> None:
    (out / "table.json").write_text(
        json.dumps(
            {
                "seeds": seeds,
                "lr_grid_start": LR_GRID,
                "lr_grid": lrs,
                "eps_grid": EPS_GRID,
                "eval_passes": EVAL_PASSES,
                "grid_mean_best_val": [
                    {"lr": lr, "eps": eps, "mean_best_val": round(m, 4)} for (lr, eps), m in grid_means.items()
                ],
                "chosen": {"lr": chosen[0], "eps": chosen[1]},
                "probe_lr_grid_mean_best_val": [
                    {"lr": lr, "mean_best_val": round(m, 4)} for lr, m in probe_means.items()
                ],
                "probe_lr_chosen": probe_lr,
                "probes": probes,
                "runs": rows,
                "means": means,
            },
            indent=1,
        )
    )
    with open(out / "table.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)

    def pct(x):
        return f"{100 * x:.1f}"

    l2s = [probes[s]["l2"] for s in seeds]

    text = [
        "# Pushing float MeZO toward the probe (issue 17)",
        "",
        "`.venv/bin/python experiments/push_zo.py` (runs cached in `runs/`). Golden float MeZO, gaussian family, "
        f"linear head on frozen all-MiniLM-L6-v2 embeddings, Rotten Tomatoes, k = {BASE.shots} shots per class "
        f"(validation: another {BASE.shots} per class; test: {BASE.test_size} examples), batch {BASE.batch_size}, "
        f"seeds {', '.join(map(str, seeds))}. Validation every {EVAL_PASSES} forward passes.",
        "",
        "**Selection uses the `best val` column only** (the best-validation accuracy of a run, and its checkpoint); "
        "`test` is the test accuracy at that checkpoint, `final` after the last step; test never chose anything. "
        "`gap` = probe test - ZO test (points; > 0: ZO below the probe). Probe: float linear probe on the same "
        "shots, L2 chosen on validation from `golden.lm.probe.L2_GRID` "
        f"(test {' / '.join(pct(probes[s]['test_accuracy']) for s in seeds)}, L2 "
        f"{' / '.join(f'{l2:.3g}' for l2 in l2s)}, "
        f"val {' / '.join(pct(probes[s]['val_accuracy']) for s in seeds)}).",
        "",
        "Runs of one seed, q, lr and eps share their trajectory (a step's perturbations and batch depend only on "
        "the seed and the step), so `q1-4k`, `q1-16k` and `q1-64k` are prefixes of `q1-256k` (and `q4-4k` of "
        "`q4-16k`): they differ only in how far the best-validation checkpoint is searched. `best val` is a "
        "maximum over checkpoints (for the probe start, over the L2 grid too), so it is optimistic; `test` at "
        "that checkpoint is the honest figure.",
        "",
        f"## Stage 1: lr x eps grid (q = 1, {BASE.steps} steps, head from zeros): mean best val (%)",
        "",
        "| lr \\ eps | " + " | ".join(fmt_sci(e) for e in EPS_GRID) + " |",
        "|---" * (len(EPS_GRID) + 1) + "|",
    ]
    for lr in lrs:
        text.append(
            f"| {fmt_sci(lr)} | "
            + " | ".join(
                (f"**{pct(grid_means[(lr, e)])}**" if (lr, e) == chosen else pct(grid_means[(lr, e)])) for e in EPS_GRID
            )
            + " |"
        )
    extended = [x for x in lrs if x not in LR_GRID]
    text += [
        "",
        f"Chosen: lr {fmt_sci(chosen[0])}, eps {fmt_sci(chosen[1])} (trainer defaults: lr "
        f"{fmt_sci(BASE.lr)}, eps {fmt_sci(BASE.eps)}). The grid started at lr "
        f"{', '.join(map(fmt_sci, LR_GRID))}"
        + (
            f" and was extended to {', '.join(map(fmt_sci, extended))} because the choice landed on its edge."
            if extended
            else "."
        )
        + " Ties go to the cell nearest the defaults.",
        "",
        f"Probe start, q = 1, {BASE.steps} steps, eps {fmt_sci(chosen[1])}: mean best val (%) by lr: "
        + ", ".join(f"{fmt_sci(lr)}: {pct(m)}" for lr, m in probe_means.items())
        + f"; chosen lr {fmt_sci(probe_lr)} (row `probe-q1-4k-lowlr`).",
        "",
        "## Means over seeds",
        "",
        "| config | q | steps | forward passes | lr | eps | init | best val | test (best val) | final test | "
        "probe | gap (points) | gap range | gap final |",
        "|---" * 14 + "|",
    ]
    for m in means:
        text.append(
            f"| {m['config']} | {m['queries']} | {m['steps']} | {m['forward_passes']} | {fmt_sci(m['lr'])} | "
            f"{fmt_sci(m['eps'])} | {m['head_init']} | {pct(m['best_val_accuracy'])} | {pct(m['test_accuracy'])} | "
            f"{pct(m['final_test_accuracy'])} | {pct(m['probe_test_accuracy'])} | {m['gap_points']:+.1f} | "
            f"{m['gap_min']:+.1f}..{m['gap_max']:+.1f} | {m['gap_final_points']:+.1f} |"
        )
    text += [
        "",
        "## Equal forward passes (from zeros)",
        "",
        "| forward passes | config: mean test (best val) / mean best val |",
        "|---|---|",
    ]
    zeros = [m for m in means if m["head_init"] == "zeros"]
    for passes in sorted(set(m["forward_passes"] for m in zeros)):
        text.append(
            f"| {passes} | "
            + "; ".join(
                f"{m['config']}: {pct(m['test_accuracy'])} / {pct(m['best_val_accuracy'])}"
                for m in zeros
                if m["forward_passes"] == passes
            )
            + " |"
        )
    text += [
        "",
        "## Per seed",
        "",
        "| config | seed | forward passes | best step | best val | test (best val) | final test | probe | gap | "
        "gap final |",
        "|---" * 10 + "|",
    ]
    for r in rows:
        text.append(
            f"| {r['config']} | {r['seed']} | {r['forward_passes']} | {r['best_step']} | "
            f"{pct(r['best_val_accuracy'])} | {pct(r['test_accuracy'])} | {pct(r['final_test_accuracy'])} | "
            f"{pct(r['probe_test_accuracy'])} | {r['gap_points']:+.1f} | {r['gap_final_points']:+.1f} |"
        )
    (out / "table.md").write_text("\n".join(text) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="\n\n".join(__doc__.split("\n\n")[:2]), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--force", action="store_true", help="re-run cached runs")
    ap.add_argument("--out", type=Path, default=RESULTS / "push-zo")
    args = ap.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    seeds = [int(s) for s in args.seeds.split(",")]
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    probes = {s: probe(s, out, args.force) for s in seeds}

    # stage 1: lr x eps (runs of one seed together: the frozen prefix is cached per split)
    lrs = list(LR_GRID)
    grid = {}
    for extension in range(MAX_EXTENSIONS + 1):
        for seed in seeds:
            print(f"grid lr {lrs}, seed {seed}", flush=True)
            for lr in lrs:
                for eps in EPS_GRID:
                    cfg = config_for(1, BASE.steps, "zeros", lr, eps, seed)
                    if len(grid.setdefault((lr, eps), [])) < len(seeds):
                        grid[(lr, eps)].append(run(cfg, out, args.force))
        chosen, grid_means = choose(grid, near_default)
        lr, eps = chosen
        at = LR_LADDER.index(lr)
        if lr == min(lrs) and at > 0 and extension < MAX_EXTENSIONS:
            lrs.insert(0, LR_LADDER[at - 1])
        elif lr == max(lrs) and at + 1 < len(LR_LADDER) and extension < MAX_EXTENSIONS:
            lrs.append(LR_LADDER[at + 1])
        else:
            break
    print(f"chosen lr {lr:g} eps {eps:g}", flush=True)

    # stage 2 and 3
    results = {name: [] for name in CONFIGS}
    at = LR_LADDER.index(lr)
    probe_grid = {plr: [] for plr in LR_LADDER[max(0, at - 2) : at + 1]}
    for seed in seeds:
        print(f"configs, seed {seed}", flush=True)
        for name, (q, steps, init) in CONFIGS.items():
            results[name].append(run(config_for(q, steps, init, lr, eps, seed), out, args.force))
        for plr in probe_grid:
            probe_grid[plr].append(run(config_for(1, BASE.steps, "probe", plr, eps, seed), out, args.force))
    probe_lr, probe_means = choose(probe_grid, lambda plr: -plr)
    results["probe-q1-4k-lowlr"] = probe_grid[probe_lr]

    rows, means = [], []
    for name, summaries in results.items():
        rs = [row(name, s, probes[s["seed"]]["test_accuracy"]) for s in summaries]
        rows += rs
        means.append(mean_row(name, rs))
    write(out, seeds, lrs, grid_means, chosen, probe_means, probe_lr, rows, means, probes)
    plot(
        {n: results[n] for n in MAIN_CURVES + ("probe-q1-4k-lowlr",)},
        float(np.mean([p["val_accuracy"] for p in probes.values()])),
        out / "curves.png",
    )
    print((out / "table.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
