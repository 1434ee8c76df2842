"""Icarus (and Verilator) on Amaranth's Verilog as it comes against the simulation netlist (``sim.netlist``:
without the wires nothing reads), side by side in one run: seconds of simulation (``test_s``, builds excluded).

    .venv/bin/python benchmarks/bench_sim_netlist.py [--out benchmarks/results/golden_speed/sim_netlist]

Cases: two stream benches of the suite (12 000 cycles, ``tests/sim/test_benches.py``), the network engine with its
tail (``pezo sim engine --net digits-mlp --split cls2 --steps 3``, the suite's elastic-trainer run) and the
20-step digits-mlp engine bench on both simulators (the Verilator / Icarus ratio of
``benchmarks/results/engine_net/sim.md``). Each variant builds in a cache directory of its own; the two variants
of a case run one after the other. Writes NAME.json and NAME.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from pezo.golden.config import PerturbConfig
from pezo.golden.zo.net_config import NetTrainConfig, split_config
from pezo.golden.zo.run import NetRun
from pezo.sim import netlist
from pezo.sim.cosim import cosimulate
from pezo.sim.runner import run_bench

STREAMS = {
    "stream-otf-32x14-leap5-spread": PerturbConfig(
        n_rngs=32, rng_bits=14, lfsr_leap=5, lfsr_bit_order="spread", perturb_dim=7, eps_shift=11
    ),
    "stream-otf-31x8-spread": PerturbConfig(
        n_rngs=31, rng_bits=8, lfsr_bit_order="spread", perturb_dim=20, eps_shift=9
    ),
}
ENGINE_RUNS = {
    "engine digits-mlp cls2, 3 steps": ({"split": "cls2"}, 3),
    "engine digits-mlp, 20 steps": ({}, 20),
}
"""case -> (the ``NetTrainConfig`` fields over digits-mlp's, steps): ``pezo sim engine --net digits-mlp [--split cls2]
--steps N``."""


@contextlib.contextmanager
def variant(name: str, root: Path):
    """``pruned``: the netlist as the suite simulates it; ``amaranth``: ``drop_unread_wires`` switched off."""
    real = netlist.drop_unread_wires
    old_cache = os.environ.get("PEZO_CACHE_DIR")
    os.environ["PEZO_CACHE_DIR"] = str(root / name)
    if name == "amaranth":
        netlist.drop_unread_wires = lambda text: text
    try:
        yield root / name
    finally:
        netlist.drop_unread_wires = real
        if old_cache is None:
            os.environ.pop("PEZO_CACHE_DIR", None)
        else:
            os.environ["PEZO_CACHE_DIR"] = old_cache


def engine_seconds(case: tuple, simulator: str) -> dict:
    fields, steps = case
    train = split_config("digits-mlp", fields["split"], steps=steps) if fields else NetTrainConfig(steps=steps)
    result = cosimulate(NetRun.prepare(train), "engine", simulator, steps)
    if not result["match"]:
        raise RuntimeError(f"{fields or 'digits-mlp'} on {simulator} failed: {result.get('mismatches')}")
    return {"test_s": result["test_s"], "build_s": result["build_s"], "cycles_per_step": result["cycles_per_step"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/golden_speed/sim_netlist"))
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="pezo-netlist-") as tmp:
        root = Path(tmp)
        for case, config in STREAMS.items():
            for name in ("amaranth", "pruned"):
                with variant(name, root) as build:
                    r = run_bench("stream", config, "icarus", build / case / "icarus", 12_000, seed=7)
                rows.append({"case": case, "simulator": "icarus", "netlist": name, "test_s": r["test_s"]})
                print(rows[-1], file=sys.stderr)
        for case, run in ENGINE_RUNS.items():
            simulators = ("icarus", "verilator") if "20 steps" in case else ("icarus",)
            for simulator in simulators:
                for name in ("amaranth", "pruned"):
                    with variant(name, root):
                        rows.append(
                            {"case": case, "simulator": simulator, "netlist": name, **engine_seconds(run, simulator)}
                        )
                    print(rows[-1], file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M")
    args.out.with_suffix(".json").write_text(json.dumps({"measured": stamp, "rows": rows}, indent=2) + "\n")
    lines = [
        f"# Icarus on the simulation netlist ({stamp}; `benchmarks/bench_sim_netlist.py`)",
        "",
        "| case | simulator | Amaranth's Verilog (s) | without unread wires (s) | speed-up |",
        "|---|---|---:|---:|---:|",
    ]
    keyed = {(r["case"], r["simulator"], r["netlist"]): r["test_s"] for r in rows}
    for case, simulator in dict.fromkeys((r["case"], r["simulator"]) for r in rows):
        before, after = keyed[case, simulator, "amaranth"], keyed[case, simulator, "pruned"]
        lines.append(f"| {case} | {simulator} | {before:.1f} | {after:.1f} | {before / after:.2f}× |")
    twenty = "engine digits-mlp, 20 steps"
    for name in ("amaranth", "pruned"):
        ratio = keyed[twenty, "icarus", name] / keyed[twenty, "verilator", name]
        lines.append(f"\nVerilator ÷ Icarus on the 20-step engine bench, {name}: {ratio:.1f}×")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
