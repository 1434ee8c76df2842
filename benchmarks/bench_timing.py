"""Fmax (nextpnr-ecp5, ECP5-85 speed 6, median over boards.flow.timing.SEEDS, every path register to register)
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

from tqdm import tqdm

from pezo.boards.flow import timing
from pezo.boards.flow.comparison_rows import comparison_designs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/timing/timing"))
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    start = time.time()
    for design in tqdm(comparison_designs(), desc="place and route", unit="design"):
        t = timing.unit_timing(design.config, design.unit, use_cache=not args.no_cache)
        rows.append(
            {"design": design.name, "strategy": design.config.to_dict().get("strategy", ""), "unit": design.unit, **t}
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "| design | unit | Fmax MHz (ECP5-85 -6, median) | per seed | logic levels (xcup) | critical path |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        seeds = " / ".join(f"{v:.0f}" for v in r["fmax_per_seed"].values())
        lines.append(
            f"| {r['design']} | {r['unit']} | {r['fmax_mhz']:.1f} | {seeds} | {r['logic_levels']} | "
            f"`{r['critical_path_ends']}` |"
        )
    table = "\n".join(lines) + "\n"
    args.out.with_suffix(".md").write_text(table)
    print(table)
    print(f"{len(rows)} designs in {time.time() - start:.0f} s; written {args.out}.json/.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
