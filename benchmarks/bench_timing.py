"""Fmax (nextpnr-ecp5, ECP5-85 speed 6, median over boards.timing.SEEDS, every path register to register)
and UltraScale+ logic levels (Yosys xcup, ltp) of every design in the resource comparison.

    .venv/bin/python benchmarks/bench_timing.py [--out benchmarks/results/timing/NAME] [--no-cache]

Writes NAME.json (one row per design: design, strategy, unit, fmax_mhz, fmax_per_seed, logic_levels,
critical path) and NAME.md (the table). Results are cached like synthesis (``cache_dir()/timing``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from amaranth.back import verilog
from tqdm import tqdm

from pezo.boards import timing
from pezo.boards.comparison import comparison_designs
from pezo.boards.report import ENGINE_TOP, design_key, engine_key, generator_verilog
from pezo.hw.engine.zo_engine import ZOEngine


def design_verilog(design) -> tuple[str, str, str]:
    """(Verilog, top, cache key) of one comparison design."""
    if design.unit == "engine":
        return verilog.convert(ZOEngine(design.config), name=ENGINE_TOP, emit_src=False), ENGINE_TOP, \
            engine_key(design.config)
    text, top = generator_verilog(design.config, design.unit)
    return text, top, design_key(design.config, design.unit)


def source_of(path_lines: list[str]) -> str:
    """'from -> to' of a nextpnr critical path (first Source, last Sink)."""
    sources = [line.split("Source ", 1)[1] for line in path_lines if "Source " in line]
    sinks = [line.split("Sink ", 1)[1] for line in path_lines if "Sink " in line]
    return f"{sources[0] if sources else '?'} -> {sinks[-1] if sinks else '?'}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/timing/timing"))
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    start = time.time()
    for design in tqdm(comparison_designs(), desc="place and route", unit="design"):
        text, top, key = design_verilog(design)
        f = timing.fmax(text, top, key=key, use_cache=not args.no_cache)
        levels = timing.logic_levels(text, top, key=key, use_cache=not args.no_cache)
        c = design.config
        rows.append({"design": design.name, "strategy": getattr(c, "strategy", ""), "unit": design.unit,
                     "fmax_mhz": f["fmax_mhz"], "fmax_per_seed": f["fmax_per_seed"], "fmax_source": f["fmax_source"],
                     "target": f["target"], "logic_levels": levels["logic_levels"],
                     "critical_path_ends": source_of(f["critical_path"]), "critical_path": f["critical_path"]})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = ["| design | unit | Fmax MHz (ECP5-85 -6, median) | per seed | logic levels (xcup) | critical path |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        seeds = " / ".join(f"{v:.0f}" for v in r["fmax_per_seed"].values())
        lines.append(f"| {r['design']} | {r['unit']} | {r['fmax_mhz']:.1f} | {seeds} | {r['logic_levels']} | "
                     f"`{r['critical_path_ends']}` |")
    table = "\n".join(lines) + "\n"
    args.out.with_suffix(".md").write_text(table)
    print(table)
    print(f"{len(rows)} designs in {time.time() - start:.0f} s; written {args.out}.json/.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
