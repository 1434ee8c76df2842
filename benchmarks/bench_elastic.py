"""The elastic trainer (issue 30): accuracy of every split of the golden INT8 engine -- full ZO, the ZO/backprop
hybrids, full integer backprop -- against the same MLP by float backprop and the float probe, at equal forward
passes, with curves, and the training memory of each split (ElasticZO's Eqs. 2-4 / 13-15).

    .venv/bin/python benchmarks/bench_elastic.py [--nets digits-mlp,rt-mlp] [--seeds 1,2,3]
        [--splits full-zo,cls2,cls1,full-bp] [--force | --cached-only] [--out benchmarks/results/engine_net/elastic]

Every run is the default ``pezo train-int8 --net N --split S --split-seed K`` (``net_config.split_config``:
its defaults were chosen on the validation split, ``screen.md``), except that full BP (one forward pass per
step) runs twice the steps, so every split spends the same forward passes. Each run's summary is cached in
``--out/runs/``. Writes ``accuracy.{md,json,csv}``, ``curves-<net>.png`` (validation accuracy against forward
passes, mean over seeds with the min-max band) and ``memory.{md,json}``.
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_int8_net import backprop_reference  # noqa: E402
from curves import plot_seed_bands  # noqa: E402

from pezo.golden.engine.backprop import split_name, split_point  # noqa: E402
from pezo.golden.engine.nets import NETS  # noqa: E402
from pezo.golden.methods.memory import LayerSpec, memory_int8  # noqa: E402
from pezo.golden.zo.int8_net import train_int8_net  # noqa: E402
from pezo.golden.zo.net_config import split_config  # noqa: E402

SPLITS = ("full-zo", "cls2", "cls1", "full-bp")
REFERENCE_DIR = ROOT / "benchmarks" / "results" / "engine_net"
"""Where ``bench_int8_net.py`` caches the float backprop references (the same data per seed)."""


def splits_of(net: str, names) -> list[str]:
    """The distinct splits of ``names`` on ``net`` (rt-mlp's cls1 is full BP: kept once, as full-bp)."""
    seen, out = set(), []
    layers = len(NETS[net])
    for name in names:
        try:
            c = split_point(name, layers)
        except ValueError:
            continue
        if c not in seen:
            seen.add(c)
            out.append(split_name(c, layers))
    return out


def run(net: str, split: str, seed: int, out: Path, force: bool, cached_only: bool) -> dict | None:
    path = out / "runs" / f"{net}-{split}-s{seed}.json"
    if path.exists() and not force:
        return json.loads(path.read_text())
    if cached_only:
        print(f"missing: {path}", file=sys.stderr)
        return None
    cfg = split_config(net, split, seed=seed)
    if cfg.split_c == 0:
        cfg = cfg.replace(steps=2 * cfg.steps)  # one forward pass a step: the same passes as the ZO splits
    t0 = time.perf_counter()
    r = train_int8_net(cfg, progress=True)
    r["wall_seconds"] = time.perf_counter() - t0
    r["backprop_reference"] = backprop_reference(net, seed, REFERENCE_DIR)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r, indent=1, default=float))
    return r


def pct(x) -> str:
    return "" if x is None else f"{100 * x:.1f}"


def signed(x) -> str:
    return "" if x is None else f"{x:+.1f}"


def row(net: str, split: str, r: dict) -> dict:
    ref = r.get("backprop_reference") or {}
    bp = ref.get("float_mlp_backprop_test_accuracy")
    probe = r.get("float_probe_test_accuracy")
    return {
        "net": net,
        "split": split,
        "split_c": r["split_c"],
        "seed": r["seed"],
        "steps": r["steps"],
        "forward_passes": r["forward_passes"],
        "bp_bits": r["bp_bits"],
        "start_accuracy": r["start_accuracy"],
        "test_accuracy": r["test_accuracy"],
        "final_test_accuracy": r["final_test_accuracy"],
        "best_val_accuracy": r["best_val_accuracy"],
        "float_mlp_backprop_test_accuracy": bp,
        "float_probe_test_accuracy": probe,
        "test_minus_backprop_points": None if bp is None else 100 * (r["test_accuracy"] - bp),
        "test_minus_probe_points": None if probe is None else 100 * (r["test_accuracy"] - probe),
        "seconds_per_step": r["seconds_per_step"],
    }


def mean_rows(rows: list[dict]) -> list[dict]:
    out = []
    for net, split in dict.fromkeys((r["net"], r["split"]) for r in rows):
        group = [r for r in rows if (r["net"], r["split"]) == (net, split)]
        mean = {"net": net, "split": split, "seed": f"mean of {len(group)}"}
        for key in group[0]:
            if key not in mean and all(isinstance(g[key], (int, float)) for g in group):
                mean[key] = float(np.mean([g[key] for g in group]))
        out.append(mean)
    return out


def write_accuracy(rows: list[dict], out: Path) -> None:
    means = mean_rows(rows)
    (out / "accuracy.json").write_text(json.dumps({"runs": rows, "means": means}, indent=1))
    with open(out / "accuracy.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        "# The elastic trainer: accuracy per split (issue 30)",
        "",
        "`.venv/bin/python benchmarks/bench_elastic.py` (runs cached in `runs/`). Each run is the default "
        "`pezo train-int8 --net N --split S --split-seed K` (defaults chosen on validation, `screen.md`); full BP "
        "runs twice the steps (one forward pass a step), so every split spends the same forward passes. Test = "
        "at the best-validation checkpoint; final = after the last step. References on the same data: the same "
        "MLP shape by float backprop (Adam, L2 and init chosen on validation) and, for rt-mlp, the float linear "
        "probe (L2 on validation). Accuracies in %.",
        "",
        "| net | split | C | seed | steps | forward passes | bp_bits | start | test | final | backprop ref | "
        "test - ref (points) | probe | test - probe (points) | s/step |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows + means:
        bits = "" if r.get("bp_bits") is None else f"{r['bp_bits']:.0f}"
        lines.append(
            f"| {r['net']} | {r['split']} | {r['split_c']:.0f} | {r['seed']} | {r['steps']:.0f} | "
            f"{r['forward_passes']:.0f} | {bits} | "
            f"{pct(r['start_accuracy'])} | {pct(r['test_accuracy'])} | {pct(r['final_test_accuracy'])} | "
            f"{pct(r.get('float_mlp_backprop_test_accuracy'))} | {signed(r.get('test_minus_backprop_points'))} | "
            f"{pct(r.get('float_probe_test_accuracy'))} | {signed(r.get('test_minus_probe_points'))} | "
            f"{r['seconds_per_step']:.4f} |"
        )
    (out / "accuracy.md").write_text("\n".join(lines) + "\n")


def plot(net: str, runs: dict, path: Path) -> None:
    plot_seed_bands(
        runs, "forward_passes", "forward passes", f"{net}: the elastic trainer's splits (golden INT8 engine)", path
    )


def memory_specs(net: str) -> tuple[LayerSpec, ...]:
    """The net as ElasticZO's memory formulas see it: each dense layer, then its ReLU (no biases: INT8)."""
    specs = []
    for i, layer in enumerate(NETS[net]):
        w = layer.inputs * layer.outputs
        specs.append(LayerSpec(f"fc{i + 1}", layer.outputs, w + layer.outputs, w, True, layer.inputs))
        if layer.relu:
            specs.append(LayerSpec(f"relu{i + 1}", layer.outputs, 0, 0, False, None))
    return tuple(specs)


def write_memory(nets: list[str], splits: list[str], out: Path) -> None:
    from pezo.golden.zo.net_config import NetTrainConfig

    rows = []
    for net in nets:
        specs = memory_specs(net)
        fcs = [i for i, s in enumerate(specs) if s.trainable]
        batch = NetTrainConfig(net=net).array.batch
        full_zo = None
        for split in splits_of(net, splits):
            c = split_point(split, len(NETS[net]))
            first_bp = len(specs) if c == len(NETS[net]) else fcs[c]
            m = memory_int8(specs, batch, first_bp)
            full_zo = full_zo or m["total"]
            rows.append({"net": net, "split": split, "batch": batch, **m, "over_full_zo": m["total"] / full_zo - 1})
    (out / "memory.json").write_text(json.dumps(rows, indent=1))
    keys = [k for k in rows[0] if k not in ("net", "split", "batch", "total", "over_full_zo")]
    lines = [
        "# The elastic trainer: training memory per split (ElasticZO-INT8, Eqs. 13-15)",
        "",
        "Bytes, every buffer live for the whole run (the paper's convention; `golden.methods.memory.memory_int8` "
        "on the engine's nets: dense layers without biases, a ReLU entry after each hidden layer), at the "
        "default batch.",
        "",
        "| net | split | batch | " + " | ".join(keys) + " | total | over full ZO |",
        "|---|---|---|" + "---|" * len(keys) + "---|---|",
    ]
    for r in rows:
        cells = " | ".join(str(r[k]) for k in keys)
        lines.append(
            f"| {r['net']} | {r['split']} | {r['batch']} | {cells} | {r['total']} | {100 * r['over_full_zo']:+.2f} % |"
        )
    (out / "memory.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nets", default="digits-mlp,rt-mlp")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--splits", default=",".join(SPLITS))
    p.add_argument("--out", type=Path, default=REFERENCE_DIR / "elastic")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--force", action="store_true")
    group.add_argument("--cached-only", action="store_true")
    args = p.parse_args(argv)
    nets, seeds = args.nets.split(","), [int(s) for s in args.seeds.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for net in nets:
        runs = {}
        for split in splits_of(net, args.splits.split(",")):
            for seed in seeds:
                r = run(net, split, seed, args.out, args.force, args.cached_only)
                if r is not None:
                    runs.setdefault(split, []).append(r)
                    rows.append(row(net, split, r))
        if runs:
            plot(net, runs, args.out / f"curves-{net}.png")
    if rows:
        write_accuracy(rows, args.out)
    write_memory(nets, args.splits.split(","), args.out)
    print((args.out / "accuracy.md").read_text() if rows else "no runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
