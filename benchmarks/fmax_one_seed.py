"""One nextpnr seed of a network engine in pezo's ECP5 timing flow (``boards.flow.timing``: the register wrapper,
synth_ecp5, nextpnr-ecp5 --85k), for a before/after when three seeds (``pezo report --timing-path``) do not fit
the time at hand; and the table of the seeds' runs kept in a directory. The engine is elaborated for ECP5
(``boards.flow.timing.ECP5``: its products in MULT18X18D registers, ``hw.engine.dsp``).

    .venv/bin/python benchmarks/fmax_one_seed.py NET BACKPROP(0|1) SEED [FIELDS] [--unit board] [--strategy pregen]
        [--target MHZ]
    .venv/bin/python benchmarks/fmax_one_seed.py --summarise DIR     # DIR/fmax-*-seedS.json -> DIR/fmax.{md,json}
    .venv/bin/python benchmarks/fmax_one_seed.py --cells NET BACKPROP(0|1) [--generic]   # synth_ecp5 cells only

NET ``head``: the head engine (``ZOEngine`` of ``EngineConfig()``, the resource comparison's "ZO engine" rows;
BACKPROP 0). FIELDS: a JSON object of ``NetConfig`` fields over the report's batch 16, e.g.
``'{"rows": 2, "cols": 2, "batch": 4}'`` for a quick probe (a 2 x 2 array places and routes in minutes and shows the
same kinds of paths as 8 x 8).
``--unit board``: the ZCU102 trainer's engine top (AXI, registers, windows) instead of the engine alone;
``--strategy pregen``: the pool strategy (otf by default). ``--target MHZ``: nextpnr's ``--freq`` (the flow's
``TARGET_MHZ`` by default; nextpnr weighs each path against the worst slack, so the achieved Fmax does not depend
on it: digits-mlp seed 1 at e9484cd routed to 100.22 MHz with 120 and with 400).
Each run's JSON (``> DIR/fmax-NET[-backprop]-seedS.json``) holds ``net``, ``backprop``, ``seed``, ``fmax_mhz``,
``critical_path`` (nextpnr's report lines) and ``seconds``. ``--cells``: the cell counts of the wrapped design
after synth_ecp5 (no nextpnr), of the ECP5 variant or with ``--generic`` of the generic Verilog (before/after).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

from pezo.boards.flow.timing import median_run, path_ends

HEAD = "head"  # NET naming the head engine (``EngineConfig()``, 384 -> 2) instead of a network


def synthesised(net: str, backprop: bool, fields=None, unit="engine", strategy="otf", generic=False):
    """(top, the synth_ecp5 netlist's JSON text) of the wrapped unit (the ECP5 variant unless ``generic``)."""
    from pezo.boards.flow.synth import run_yosys
    from pezo.boards.flow.timing import ECP5, ECP5_SCRIPT, WRAP_TOP, register_wrapper, unit_verilog
    from pezo.golden.engine.nets import net_config

    if net == HEAD:  # the head engine (ZOEngine, the resource comparison's "ZO engine" rows)
        from pezo.golden.engine.zo_engine import EngineConfig

        config = EngineConfig().replace(strategy=strategy, **(fields or {}))
    else:
        config = net_config(net, **{"batch": 16, **(fields or {})}, backprop=backprop, strategy=strategy)
    text, top, _ = unit_verilog(config, unit, None if generic else ECP5)
    wrapped = register_wrapper(text, top)
    return top, run_yosys(wrapped, ECP5_SCRIPT.format(top=WRAP_TOP), "top.json", prefix="ecp5-", design=top)


def cell_counts(netlist: str) -> dict:
    from pezo.boards.flow.timing import WRAP_TOP

    cells = json.loads(netlist)["modules"][WRAP_TOP]["cells"].values()
    return dict(sorted(Counter(cell["type"] for cell in cells if not cell["type"].startswith("$")).items()))


def run_one(
    net: str,
    backprop: bool,
    seed: int,
    fields: dict | None = None,
    unit: str = "engine",
    strategy: str = "otf",
    target: str | None = None,
) -> dict:
    from pezo.boards.flow.timing import TARGET_MHZ, _nextpnr, parse_nextpnr_log

    started = time.time()
    top, netlist = synthesised(net, backprop, fields, unit, strategy)
    run = parse_nextpnr_log(_nextpnr(netlist, seed, top, int(target or TARGET_MHZ)))
    out = {"net": net, "backprop": backprop, "seed": seed, "fmax_mhz": run["fmax_mhz"]}
    if unit != "engine":
        out["unit"] = unit
    if strategy != "otf":
        out["strategy"] = strategy
    if fields:
        out["fields"] = fields
    if target:
        out["target_mhz"] = int(target)
    return {**out, "critical_path": run["critical_path"], "seconds": round(time.time() - started)}


def summarise(directory: Path) -> list[dict]:
    """Per (net, backprop): the seeds' Fmax, their median and the median seed's path ends; writes fmax.{md,json}."""
    runs: dict = {}
    for path in sorted(directory.glob("fmax-*-seed*.json")):
        if not re.fullmatch(r"fmax-.+-seed\d+\.json", path.name):  # e.g. a run kept from before a change
            continue
        run = json.loads(path.read_text())
        if run.get("fields"):  # a probe of another array size: not the report's design
            continue
        key = (run["net"], run["backprop"], run.get("unit", "engine"), run.get("strategy", "otf"))
        runs.setdefault(key, []).append(run)
    rows = []
    for (net, backprop, unit, strategy), group in sorted(runs.items()):
        by_seed = {r["seed"]: r for r in sorted(group, key=lambda r: r["seed"])}
        median, median_seed = median_run({seed: r["fmax_mhz"] for seed, r in by_seed.items()})
        rows.append(
            {
                "net": net,
                "tail": backprop,
                "unit": unit,
                "strategy": strategy,
                "seeds": {str(seed): r["fmax_mhz"] for seed, r in by_seed.items()},
                "median_mhz": median if len(group) >= 3 else None,
                "critical_path": path_ends(by_seed[median_seed]["critical_path"]),
            }
        )
    (directory / "fmax.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "# Fmax on ECP5-85 -6 (nextpnr, pezo's register wrapper), per seed",
        "",
        f"`.venv/bin/python benchmarks/fmax_one_seed.py NET 0|1 SEED` per row and seed; this table: "
        f"`.venv/bin/python benchmarks/fmax_one_seed.py --summarise {directory}`. The median needs three seeds.",
        "",
        "| net | unit | strategy | tail | Fmax per seed (MHz) | median (MHz) | critical path (the median seed's) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        seeds = ", ".join(f"{s}: {v}" for s, v in r["seeds"].items())
        median = "—" if r["median_mhz"] is None else f"**{r['median_mhz']}**"
        tail = "yes" if r["tail"] else "no"
        lines.append(
            f"| {r['net']} | {r['unit']} | {r['strategy']} | {tail} | {seeds} | {median} | `{r['critical_path']}` |"
        )
    (directory / "fmax.md").write_text("\n".join(lines) + "\n")
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "--summarise":
        for row in summarise(Path(sys.argv[2])):
            print(json.dumps(row))
    elif sys.argv[1] == "--cells":
        net, backprop, generic = sys.argv[2], sys.argv[3] == "1", "--generic" in sys.argv
        _, netlist = synthesised(net, backprop, generic=generic)
        print(json.dumps({"net": net, "backprop": backprop, "generic": generic, "cells": cell_counts(netlist)}))
    else:
        args, options = sys.argv[1:], {}
        for flag in ("--unit", "--strategy", "--target"):
            if flag in args:
                at = args.index(flag)
                options[flag[2:]] = args[at + 1]
                del args[at : at + 2]
        fields = json.loads(args[3]) if len(args) > 3 else None
        print(json.dumps(run_one(args[0], args[1] == "1", int(args[2]), fields, **options)))
