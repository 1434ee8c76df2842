"""Which R x C array shape a network prefers: whole-step cycles of the network engine for every shape of
``--macs`` MACs that tiles the network (C divides every layer's inputs, R divides the batch), measured on
Amaranth's simulator (``OP_TRAIN``, on-chip loss, batches loaded while computing) beside the analytical
bound. The mapping broadcasts one weight word (C inputs of one output) to R examples, so no layer leaves
MACs idle while it runs -- a narrow layer such as 32 -> 10 costs its share of the fixed gaps (``LAYER_GAP``
per layer boundary, a stream command per tile and pass), which grow with the number of tiles B / R,
while the update pass (|W| / C cycles) shrinks with C. Writes ``OUT/shapes.{json,md}``.

    .venv/bin/python benchmarks/bench_net_shapes.py [--nets digits-mlp rt-mlp] [--macs 64] [--steps 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.nets import net_config
from pezo.hw.engine.net_engine import NetEngine
from pezo.sim.amaranth_sim import run_host
from pezo.sim.net_host import net_training


def shapes(net: str, macs: int, batch: int) -> list[tuple[int, int]]:
    out = []
    for cols in range(1, macs + 1):
        rows = macs // cols
        if rows * cols != macs or batch % rows:
            continue
        try:
            net_config(net, rows=rows, cols=cols, batch=batch)
        except ValueError:
            continue
        out.append((rows, cols))
    return out


def measure(net: str, rows: int, cols: int, batch: int, steps: int) -> dict:
    cfg = net_config(net, rows=rows, cols=cols, batch=batch)
    rng = np.random.default_rng(0)
    xs = rng.integers(-128, 128, (steps, batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (steps, batch))
    w = rng.integers(-40, 41, cfg.weights)
    started = time.perf_counter()
    r = run_host(NetEngine(cfg), lambda io: net_training(io, cfg, LossConfig(margin=1000), xs, ys, w))
    return {
        "net": net,
        "rows": rows,
        "cols": cols,
        "batch": batch,
        "match": r["match"],
        "busy_cycles_per_step": r["busy_cycles_per_step"],
        "cycle_bound": cfg.cycle_bound(),
        "busy_cycle_ratio": round(r["busy_cycles_per_step"] / cfg.cycle_bound(), 4),
        "mac_utilisation": round(cfg.useful_mac_cycles() / r["busy_cycles_per_step"], 4),
        "update_cycles": cfg.weight_words,
        "tiles": cfg.array.tiles,
        "layer_utilisation": cfg.layer_utilisation(),
        "sim_seconds": round(time.perf_counter() - started, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nets", nargs="+", default=["digits-mlp", "rt-mlp"])
    ap.add_argument("--macs", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/engine_net"))
    args = ap.parse_args()
    rows = []
    for net in args.nets:
        for r, c in shapes(net, args.macs, args.batch):
            rows.append(measure(net, r, c, args.batch, args.steps))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "layer_utilisation"}), file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "shapes.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "| net | R x C | tiles | whole-step cycles (busy) | bound | ratio | MAC utilisation | update cycles |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['net']} | {r['rows']} x {r['cols']} | {r['tiles']} | {r['busy_cycles_per_step']:.1f} | "
            f"{r['cycle_bound']} | {r['busy_cycle_ratio']:.3f} | {100 * r['mac_utilisation']:.1f} % | "
            f"{r['update_cycles']} |"
        )
    (args.out / "shapes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(r["match"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
