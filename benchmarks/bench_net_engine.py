"""Co-simulation of the network engine on real data: ``pezo sim engine --net N --loss L --strategy S
--simulator SIM --steps 20 --json`` for both nets x both strategies x both simulators (on-chip loss), plus
the host-loss mode, the run without double buffering and rt-mlp with the tuned weight decay, at ``--batch`` (default
16, so the 20 steps of rt-mlp stay minutes on Icarus), plus digits-mlp at the trainer's batch 128 with and without
double buffering
on Verilator. Writes ``OUT/sim.json`` (every CLI object),
``OUT/sim.md`` and ``OUT/sim.csv``.

    .venv/bin/python benchmarks/bench_net_engine.py [--steps 20] [--out benchmarks/results/engine_net]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

RUNS = [
    (net, "on-chip", strategy, sim, True, None)
    for net in ("digits-mlp", "rt-mlp")
    for strategy in ("otf", "pregen")
    for sim in ("verilator", "icarus")
]
RUNS += [(net, "on-chip", "otf", "verilator", False, None) for net in ("digits-mlp", "rt-mlp")]
RUNS += [(net, "host", "otf", "verilator", True, None) for net in ("digits-mlp", "rt-mlp")]
RUNS += [("digits-mlp", "on-chip", "otf", "verilator", overlap, 128) for overlap in (True, False)]
RUNS = [run + ((),) for run in RUNS]
RUNS += [
    ("rt-mlp", "on-chip", strategy, "verilator", True, None, ("--wd-shift", "6", "--wd-every", "2"))
    for strategy in ("otf", "pregen")
]
"""(net, loss, strategy, simulator, double buffering, batch or None for ``--batch``, extra options: the
tuned weight decay ``TUNED_WD`` on the engine's WD_SHIFT / WD_EVERY registers)"""
COLUMNS = (
    "net",
    "loss",
    "strategy",
    "simulator",
    "overlap",
    "batch",
    "options",
    "match",
    "steps",
    "cycles_per_step",
    "cycle_bound",
    "cycle_ratio",
    "busy_cycle_ratio",
    "mac_utilisation",
    "load_hidden",
    "test_s",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=16, help="engine batch of the main rows (default 16)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/engine_net"))
    args = ap.parse_args()
    pezo = str(Path(sys.executable).with_name("pezo"))
    results = []
    for net, loss, strategy, sim, overlap, batch, extra in RUNS:
        cmd = [
            pezo,
            "sim",
            "engine",
            "--net",
            net,
            "--loss",
            loss,
            "--strategy",
            strategy,
            "--simulator",
            sim,
            "--steps",
            str(args.steps),
            "--batch",
            str(batch or args.batch),
            "--json",
            *extra,
        ] + ([] if overlap else ["--no-overlap"])
        print(" ".join(cmd[1:]), file=sys.stderr, flush=True)
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode not in (0, 1):
            print(done.stderr, file=sys.stderr)
            return 2
        results.append({"command": "pezo " + " ".join(cmd[1:]), "options": " ".join(extra), **json.loads(done.stdout)})
        print(
            f"  match {results[-1]['match']}, {results[-1]['cycles_per_step']:.1f} cycles/step, "
            f"ratio {results[-1]['cycle_ratio']:.3f}",
            file=sys.stderr,
            flush=True,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sim.json").write_text(json.dumps(results, indent=2) + "\n")
    with open(args.out / "sim.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in results:
            w.writerow([r.get(c) for c in COLUMNS])
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in results:
        lines.append(
            "| " + " | ".join(f"{r[c]:.3f}" if isinstance(r.get(c), float) else str(r.get(c)) for c in COLUMNS) + " |"
        )
    (args.out / "sim.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(r["match"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
