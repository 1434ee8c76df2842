"""Screening of the rt-mlp levers (issue 15: close the gap to the float probe), every choice on validation.
Question: which training lever (weight decay, margin, batch, steps, checkpoint averaging, PCA start, ...) brings
the INT8 on-chip ZO of rt-mlp closer to the float probe? Answer: the update's integer weight decay
``wd_shift`` 6 on every second step with the host's average of the last 8 checkpoints (``TUNED_WD``: validation
76.4 / 69.9 against 73.8 / 70.7 without decay, seeds 1 / 2); batch 512, 8 000 steps, larger margins and the PCA
start do not help. Results: ``benchmarks/results/engine_net/screen/screen.{md,json}`` and ``runs/``. Command:

    .venv/bin/python experiments/screen_rt_mlp.py --runs NAME[,NAME...] [--seeds 1] [--force]
        [--out benchmarks/results/engine_net/screen]

Each named run is ``TUNED["rt-mlp"]`` with the overrides in ``RUNS`` (``NetTrainConfig`` fields). Every run's
summary is cached in ``--out/runs/<name>-s<seed>.json``; ``screen.{md,json}`` list every cached run (config,
best validation, its step, test at the best-validation checkpoint, final test, the float probe on the same
shots with L2 chosen on validation). Selection uses the ``best val`` column only; test is reported, never
used to choose.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.golden.zo.int8_net import train_int8_net  # noqa: E402
from pezo.golden.zo.net_config import TUNED

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

BASE = TUNED["rt-mlp"]
RUNS = {
    # name: overrides of TUNED["rt-mlp"] (steps, strategy, shots, wd_shift, wd_every, last_init, batch, ...)
    "base-pregen": dict(strategy="pregen"),
    "base": dict(),
    "wd7-pregen": dict(strategy="pregen", wd_shift=7),
    "wd6-pregen": dict(strategy="pregen", wd_shift=6),
    "wd5-pregen": dict(strategy="pregen", wd_shift=5),
    "wd4-pregen": dict(strategy="pregen", wd_shift=4),
    "wd6e4-pregen": dict(strategy="pregen", wd_shift=6, wd_every=4),
    "wd4e4-pregen": dict(strategy="pregen", wd_shift=4, wd_every=4),
    "wd5e16-pregen": dict(strategy="pregen", wd_shift=5, wd_every=16),
    "wd3e16-pregen": dict(strategy="pregen", wd_shift=3, wd_every=16),
    "wd6e2-pregen": dict(strategy="pregen", wd_shift=6, wd_every=2),
    "wd6-b512-pregen": dict(strategy="pregen", wd_shift=6, batch=512),
    "wd6-is05-pregen": dict(strategy="pregen", wd_shift=6, init_scale=0.5),
    "wd6-m8k-pregen": dict(strategy="pregen", wd_shift=6, margin=8192),
    "wd6-k1024-pregen": dict(strategy="pregen", wd_shift=6, shots=1024),
    "wd6e2-k1024-pregen": dict(strategy="pregen", wd_shift=6, wd_every=2, shots=1024),
    "probe-pregen": dict(strategy="pregen", last_init="probe"),
    "probe-wd6-pregen": dict(strategy="pregen", last_init="probe", wd_shift=6),
    "k1024-pregen": dict(strategy="pregen", shots=1024),
    "b512-pregen": dict(strategy="pregen", batch=512),
    "wd6e2-b512-pregen": dict(strategy="pregen", wd_shift=6, wd_every=2, batch=512),
    "wd6e2-m32k-pregen": dict(strategy="pregen", wd_shift=6, wd_every=2, margin=32768),
    "wd6e2-8k-pregen": dict(strategy="pregen", wd_shift=6, wd_every=2, steps=8000),
    "wd6e2-m64k-pregen": dict(strategy="pregen", wd_shift=6, wd_every=2, margin=65536),
    "wd6e2-m128k-pregen": dict(strategy="pregen", wd_shift=6, wd_every=2, margin=131072),
    "wd6e2-ev125-pregen": dict(strategy="pregen", wd_shift=6, wd_every=2, eval_every=125),
    "pca-wd6e2-pregen": dict(strategy="pregen", hidden_init="pca", wd_shift=6, wd_every=2),
    "pca-pregen": dict(strategy="pregen", hidden_init="pca"),
    "pca-wd7e2-pregen": dict(strategy="pregen", hidden_init="pca", wd_shift=7, wd_every=2),
    "pca-wd6e2-m8k-pregen": dict(strategy="pregen", hidden_init="pca", wd_shift=6, wd_every=2, margin=8192),
}
KEEP = (
    "test_accuracy",
    "final_test_accuracy",
    "best_step",
    "best_val_accuracy",
    "start_accuracy",
    "start_val_accuracy",
    "float_probe_test_accuracy",
    "gap_points",
    "seconds_per_step",
    "weight_change_lsb",
    "weight_range",
    "train_loss_end",
    "curve",
    "init",
    "config",
    "train_size",
    "val_size",
    "model",
    "model_val_accuracy",
    "checkpoint_average_val",
    "zero_g_steps",
)


BASE_KEYS = ("steps", "batch", "margin", "g_lr", "eps_shift", "shots")
"""The base run's fields the tables' header names."""


def run(name: str, seed: int, out: Path, force: bool, steps: int | None) -> dict:
    overrides = dict(RUNS[name])
    if steps:
        overrides["steps"] = steps
    path = out / "runs" / f"{name}{'-' + str(steps) if steps else ''}-s{seed}.json"
    if path.exists() and not force:
        return json.loads(path.read_text())
    config = BASE.replace(seed=seed, **overrides)
    result = train_int8_net(config, progress=False)
    summary = {k: result[k] for k in KEEP if k in result}
    summary["name"], summary["overrides"] = name, overrides
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=1))
    return summary


def late_val(r: dict) -> float:
    """Mean validation accuracy over the checkpoints of the run's second half: a less noisy validation
    statistic than the best checkpoint (the max of ~16 noisy values); validation only."""
    half = r["config"]["steps"] / 2
    return sum(c["val_accuracy"] for c in r["curve"] if c["step"] > half) / max(
        1, sum(c["step"] > half for c in r["curve"])
    )


def avg_cell(r: dict) -> str:
    """Validation accuracy of the host's checkpoint averages (``NetTrainConfig.average_last``): the last 4, 8
    and half of the checkpoints (runs before the field: blank)."""
    avg = r.get("checkpoint_average_val")
    if not avg:
        return ""
    half = str(len(r["curve"][1:]) // 2)
    return " / ".join(f"{100 * avg[n]:.1f}" if n in avg else "-" for n in ("4", "8", half))


def table(out: Path) -> None:
    rows = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]
    lines = [
        "# rt-mlp screening (issue 15)",
        "",
        "`.venv/bin/python experiments/screen_rt_mlp.py --runs NAME --seeds S` (runs cached in `runs/`). Base: "
        f"`TUNED['rt-mlp']` "
        f"({', '.join(f'{k}={v}' for k, v in BASE.to_dict().items() if k in BASE_KEYS)}). "
        "Accuracies in %; chosen on validation only (**best val** and the mean validation accuracy over the second "
        "half of the run; the validation accuracy of the host's average of the last 4 / 8 / half of the "
        "checkpoints); test = of the run's model (the best-validation checkpoint unless `average_last` is set); "
        "probe = float "
        "linear probe on the same shots, L2 chosen on validation.",
        "",
        "| run | overrides | seed | train | best val | step | val mean, 2nd half | start test | test (best val) | "
        "final test | probe | "
        "test - probe | mean |dw| (LSB) | s/step | val, mean of last 4 / 8 / half ckpts |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cfg = r["config"]
        lines.append(
            f"| {r['name']} | {json.dumps(r['overrides'])} | {cfg['seed']} | {r['train_size']} | "
            f"{100 * r['best_val_accuracy']:.1f} | {r['best_step']} | {100 * late_val(r):.1f} | "
            f"{100 * r['start_accuracy']:.1f} | "
            f"{100 * r['test_accuracy']:.1f} | {100 * r['final_test_accuracy']:.1f} | "
            f"{100 * r['float_probe_test_accuracy']:.1f} | {-r['gap_points']:.1f} | "
            f"{r['weight_change_lsb']:.1f} | {r['seconds_per_step']:.4f} | {avg_cell(r)} |"
        )
    (out / "screen.md").write_text("\n".join(lines) + "\n")
    (out / "screen.json").write_text(
        json.dumps([{**{k: v for k, v in r.items() if k != "curve"}, "late_val": late_val(r)} for r in rows], indent=1)
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        description="\n\n".join(__doc__.split("\n\n")[:2]), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", default="", help="comma-separated names of RUNS (empty: only rewrite the tables)")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--out", type=Path, default=RESULTS / "engine_net" / "screen")
    args = ap.parse_args(argv)
    for name in filter(None, args.runs.split(",")):
        for seed in (int(s) for s in args.seeds.split(",")):
            r = run(name, seed, args.out, args.force, args.steps)
            print(
                f"{name} s{seed}: val {r['best_val_accuracy']:.3f} @ {r['best_step']} test {r['test_accuracy']:.3f} "
                f"final {r['final_test_accuracy']:.3f} probe {r['float_probe_test_accuracy']:.3f}",
                flush=True,
            )
            table(args.out)
    table(args.out)


if __name__ == "__main__":
    main()
