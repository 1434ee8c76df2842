"""digits-cnn (issue 33): the golden INT8 engine's CNN by ZO and by the elastic hybrids against the same CNN by float
backprop, three seeds, with curves.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_cnn.py [--seeds 1,2,3] [--splits full-zo,cls2,cls1]
        [--float-steps 2000] [--force | --cached-only] [--out benchmarks/results/engine_net/cnn]

Every INT8 run is the default ``pezo train-int8 --net digits-cnn --split S --split-seed K``
(``net_config.split_config``: the defaults chosen on validation, ``screen-cnn.md``). The float reference is
``golden.zo.float_cnn`` (Adam, its learning rate chosen on validation from ``LR_GRID``, ``--float-steps`` steps of
the same batch and schedule). Each run's summary is cached in ``--out/runs/``. Writes ``accuracy.{md,json,csv}`` and
``curves-digits-cnn.png`` (validation accuracy against training steps, mean over seeds with the min-max band).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curves import plot_seed_bands  # noqa: E402

from pezo.golden.zo.float_cnn import float_cnn_reference  # noqa: E402
from pezo.golden.zo.int8_net import train_int8_net  # noqa: E402
from pezo.golden.zo.net_config import NetTrainConfig, split_config  # noqa: E402
from pezo.golden.zo.net_data import load_data  # noqa: E402

NET = "digits-cnn"
FLOAT = "float-backprop"


def cached(path: Path, force: bool, cached_only: bool, make) -> dict | None:
    if path.exists() and not force:
        return json.loads(path.read_text())
    if cached_only:
        print(f"missing: {path}", file=sys.stderr)
        return None
    t0 = time.perf_counter()
    r = make()
    r["wall_seconds"] = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r, indent=1, default=float))
    return r


def run_int8(split: str, seed: int, out: Path, force: bool, cached_only: bool) -> dict | None:
    cfg = split_config(NET, split, seed=seed)
    return cached(out / "runs" / f"{NET}-{split}-s{seed}.json", force, cached_only, lambda: train_int8_net(cfg))


def run_float(seed: int, steps: int, out: Path, force: bool, cached_only: bool) -> dict | None:
    batch = NetTrainConfig(net=NET).array.batch

    def make():
        data = load_data(NetTrainConfig(net=NET, seed=seed))
        return float_cnn_reference(NET, data, seed, steps, batch)

    return cached(out / "runs" / f"{NET}-{FLOAT}-s{seed}-{steps}.json", force, cached_only, make)


def row(method: str, r: dict) -> dict:
    return {
        "method": method,
        "seed": r["seed"],
        "steps": r["steps"],
        "forward_passes": r.get("forward_passes", r["steps"]),
        "bp_bits": r.get("bp_bits"),
        "model": r.get("model", "best-validation checkpoint"),
        "test_accuracy": r["test_accuracy"],
        "best_val_accuracy": r["best_val_accuracy"],
        "final_test_accuracy": r.get("final_test_accuracy"),
        "lr": r.get("lr"),
        "wall_seconds": r.get("wall_seconds"),
    }


def write(rows: list[dict], out: Path) -> None:
    means = []
    for method in dict.fromkeys(r["method"] for r in rows):
        group = [r for r in rows if r["method"] == method]
        test = [g["test_accuracy"] for g in group]
        means.append(
            {"method": method, "seeds": len(group), "mean": float(np.mean(test)), "min": min(test), "max": max(test)}
        )
    (out / "accuracy.json").write_text(json.dumps({"runs": rows, "means": means}, indent=1))
    with open(out / "accuracy.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        "# digits-cnn: golden INT8 ZO and elastic hybrids against float backprop (issue 33)",
        "",
        f"`OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_cnn.py {' '.join(sys.argv[1:])}` (runs cached in "
        "`runs/`; measured on a shared 2-core machine, so the seconds are under contention). INT8 rows: the default "
        "`pezo train-int8 --net digits-cnn --split S --split-seed K`; test at the reported model (best-validation "
        "checkpoint or the split's average of the last checkpoints). Float: the same CNN (float64, no biases) by "
        "Adam, learning rate chosen on validation. Accuracies in %.",
        "",
        "| method | seed | steps | forward passes | bp_bits | model | test | best validation | final test | s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        final = "" if r["final_test_accuracy"] is None else f"{100 * r['final_test_accuracy']:.1f}"
        lines.append(
            f"| {r['method']} | {r['seed']} | {r['steps']} | {r['forward_passes']} | {r['bp_bits'] or ''} | "
            f"{r['model']} | {100 * r['test_accuracy']:.1f} | {100 * r['best_val_accuracy']:.1f} | {final} | "
            f"{r['wall_seconds'] or 0:.0f} |"
        )
    lines += ["", "| method | seeds | mean test | min | max |", "|---|---|---|---|---|"]
    for m in means:
        low, high = 100 * m["min"], 100 * m["max"]
        lines.append(f"| {m['method']} | {m['seeds']} | **{100 * m['mean']:.1f}** | {low:.1f} | {high:.1f} |")
    (out / "accuracy.md").write_text("\n".join(lines) + "\n")


def plot(runs: dict, path: Path) -> None:
    plot_seed_bands(
        runs,
        "step",
        "training steps (ZO: 2 forward passes each)",
        "digits-cnn: golden INT8 ZO / elastic hybrids vs float backprop",
        path,
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--splits", default="full-zo,cls2,cls1")
    p.add_argument("--float-steps", type=int, default=2000)
    p.add_argument("--force", action="store_true")
    p.add_argument("--cached-only", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "engine_net" / "cnn")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    runs: dict = {}
    for split in filter(None, args.splits.split(",")):
        for seed in seeds:
            r = run_int8(split, seed, args.out, args.force, args.cached_only)
            if r is not None:
                runs.setdefault(f"INT8 {split}", []).append(r)
    for seed in seeds:
        r = run_float(seed, args.float_steps, args.out, args.force, args.cached_only)
        if r is not None:
            runs.setdefault(FLOAT, []).append(r)
    rows = [row(method, r) for method, results in runs.items() for r in results]
    if not rows:
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    write(rows, args.out)
    plot(runs, args.out / f"curves-{NET}.png")
    print((args.out / "accuracy.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
