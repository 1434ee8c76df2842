"""The elastic trainer on the RTL (issue 30): ``pezo sim engine --net N --split S --steps K --json`` for every
net, split and simulator, one table of match, cycles per step against the bound, and the tail's cycles; plus the
three hardware numbers of the engine with and without its tail (``pezo report --strategy engine-otf --net N
[--backprop] --json``: Yosys xcup resources, nextpnr ECP5 Fmax, median of 3 seeds).

    .venv/bin/python benchmarks/bench_elastic_rtl.py [--nets digits-mlp,rt-mlp] [--splits cls2,full-bp]
        [--simulators verilator,icarus] [--steps 20] [--icarus-batch 16] [--no-hardware]
        [--out benchmarks/results/engine_net/elastic/rtl]

Verilator runs the trainer's batch (digits-mlp 128, rt-mlp 256); Icarus, ~50x slower, runs ``--icarus-batch``
(default 16: two tiles of the 8 x 8 array -- the same circuit and every path of the tail, fewer cycles per step).

Each command's JSON is kept in ``--out/runs/`` (a finished run is not repeated unless ``--force``); writes
``rtl.{md,json}`` and ``hardware.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEZO = [sys.executable, "-m", "pezo"]


def run_json(argv: list[str], cache: Path, force: bool) -> dict:
    """The JSON of ``pezo argv`` (cached in ``cache``)."""
    if cache.exists() and not force:
        return json.loads(cache.read_text())
    print(" ".join(["pezo", *argv]), file=sys.stderr, flush=True)
    proc = subprocess.run([*PEZO, *argv], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"pezo {' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    result = json.loads(proc.stdout)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(result, indent=2) + "\n")
    return result


def rtl_table(args, runs: Path) -> list[dict]:
    rows = []
    for net in args.nets:
        for split in args.splits:
            for sim in args.simulators:
                argv = ["sim", "engine", "--net", net, "--split", split, "--steps", str(args.steps)]
                if sim == "icarus" and args.icarus_batch:
                    argv += ["--batch", str(args.icarus_batch)]
                r = run_json([*argv, "--simulator", sim, "--json"], runs / f"sim-{net}-{split}-{sim}.json", args.force)
                rows.append(
                    {
                        "net": net,
                        "split": r["split"],
                        "split_c": r["split_c"],
                        "bp_bits": r["bp_bits"],
                        "simulator": sim,
                        "steps": r["steps"],
                        "batch": r["batch"],
                        "match": r["match"],
                        "cycles_per_step": r["cycles_per_step"],
                        "cycle_bound": r["cycle_bound"],
                        "cycle_ratio": round(r["cycle_ratio"], 4),
                        "bp_cycles": r["bp_cycles"],
                        "bp_cycle_bound": r["bp_cycle_bound"],
                        "command": "pezo " + " ".join(argv + ["--simulator", sim, "--json"]),
                    }
                )
    return rows


HARDWARE_KEYS = ("LUT", "FF", "CARRY", "BRAM", "DSP", "LUTRAM", "fmax_mhz")


def hardware_table(args, runs: Path) -> list[dict]:
    rows = []
    for net in args.nets:
        for tail in (False, True):
            argv = ["report", "--strategy", "engine-otf", "--net", net, "--json", "--timing-path"]
            argv += ["--backprop"] if tail else []
            r = run_json(argv, runs / f"report-{net}{'-backprop' if tail else ''}.json", args.force)
            row = {"net": net, "tail": tail, **{k: r.get(k) for k in HARDWARE_KEYS}}
            row["fmax_per_seed"] = r.get("fmax_per_seed")
            path = r.get("critical_path") or {}
            row["critical_path"] = path.get("summary") if isinstance(path, dict) else path
            row["command"] = "pezo " + " ".join(argv)
            rows.append(row)
    return rows


def write_md(path: Path, title: str, rows: list[dict], keys: tuple) -> None:
    lines = [f"# {title}", "", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(k)) for k in keys) + " |")
    lines += ["", "Commands: " + "; ".join(sorted({f"`{r['command']}`" for r in rows}))]
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nets", default="digits-mlp,rt-mlp")
    p.add_argument("--splits", default="cls2,full-bp")
    p.add_argument("--simulators", default="verilator,icarus")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--icarus-batch", type=int, default=16)
    p.add_argument("--no-hardware", action="store_true")
    p.add_argument("--force", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "engine_net" / "elastic" / "rtl")
    args = p.parse_args(argv)
    args.nets, args.splits = args.nets.split(","), args.splits.split(",")
    args.simulators = args.simulators.split(",")
    runs = args.out / "runs"
    rows = rtl_table(args, runs)
    (args.out / "rtl.json").write_text(json.dumps(rows, indent=2) + "\n")
    keys = ("net", "split", "bp_bits", "simulator", "batch", "steps", "match", "cycles_per_step", "cycle_bound")
    keys += ("cycle_ratio",)
    write_md(args.out / "rtl.md", "The elastic trainer on the RTL", rows, (*keys, "bp_cycles", "bp_cycle_bound"))
    if not args.no_hardware:
        hw = hardware_table(args, runs)
        (args.out / "hardware.json").write_text(json.dumps(hw, indent=2) + "\n")
        write_md(
            args.out / "hardware.md",
            "The engine with and without its backprop tail",
            hw,
            ("net", "tail", *HARDWARE_KEYS),
        )
    print(f"wrote {args.out}")
    return 0 if all(r["match"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
