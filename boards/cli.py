"""The ``pezo`` command line: build, report, verilog, simulate.

Bad input -> one line ``pezo: error: ...`` naming the parameter and its range, exit status 2,
nothing written. Failures of external tools -> one line, exit status 1.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from golden.config import STRATEGIES, PerturbConfig

DEFAULT_OUT = Path("build") / "pezo"


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise CLIError(f"{message} (see pezo {self.prog.split(' ', 1)[1] + ' ' if ' ' in self.prog else ''}--help)")


def _raw(text: str):
    """Integers as ints; anything else unchanged, so the config names the field and its range."""
    return int(text) if re.fullmatch(r"[+-]?\d+", text.strip()) else text


def _config(args) -> PerturbConfig:
    """The config of the generator options, checked against the unit (one error line naming the field)."""
    from boards.report import check_unit

    fields = dict(strategy=args.strategy, n_rngs=args.n_rngs, rng_bits=args.rng_bits, seed=args.seed,
                  rewind=args.rewind, pool_size=args.pool_size, pool_bits=args.pool_bits, lanes=args.lanes,
                  banks=args.banks, perturb_dim=args.perturb_dim, eps_shift=args.eps_shift)
    try:
        config = PerturbConfig(**fields)
        check_unit(config, args.unit)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    return config


def _add_generator_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", default="otf", help=f"perturbation strategy: {', '.join(STRATEGIES)} "
                   "(default otf)")
    p.add_argument("--unit", default="generator", help="what to build: generator (the strategy's random "
                   "source alone, default), stream (the perturbation stream unit: source + rewind + scaling "
                   "+ sign), scale (the otf scale LUT)")
    p.add_argument("--n-rngs", type=_raw, default=32, metavar="N", help="URNGs in the array, 1..1024 (default 32)")
    p.add_argument("--rng-bits", type=_raw, default=14, metavar="B", help="bits per URNG, 3..32 (default 14)")
    p.add_argument("--seed", type=_raw, default=1, metavar="S", help="master seed, 1..2^B-1 (default 1)")
    p.add_argument("--rewind", action="store_true", help="include the save/restore (rewind) path (otf and "
                   "gaussian generators; the pool and every stream unit always have it)")
    defaults = PerturbConfig()
    p.add_argument("--pool-size", type=_raw, default=defaults.pool_size, metavar="N",
                   help=f"pregen: values in the pool, lanes..2^20 (default {defaults.pool_size})")
    p.add_argument("--pool-bits", type=_raw, default=defaults.pool_bits, metavar="W",
                   help=f"pregen: bits per pool value, 4..18 (default {defaults.pool_bits})")
    p.add_argument("--lanes", type=_raw, default=defaults.lanes, metavar="L",
                   help=f"pregen / gaussian: values (generators) per cycle, 1..1024 (default {defaults.lanes})")
    p.add_argument("--banks", type=_raw, default=defaults.banks, metavar="K",
                   help=f"pregen: BRAM banks, a power of two dividing lanes (default {defaults.banks})")
    p.add_argument("--perturb-dim", type=_raw, default=defaults.perturb_dim, metavar="D",
                   help=f"values per perturbation, 1..2^31-1 (default {defaults.perturb_dim})")
    p.add_argument("--eps-shift", type=_raw, default=defaults.eps_shift, metavar="S",
                   help=f"stream: epsilon = 2^(12-S) output LSBs, 0..24 (default {defaults.eps_shift})")


# -- subcommands ---------------------------------------------------------------------------------
def _design_name(config: PerturbConfig, unit: str) -> str:
    from boards.comparison import Design
    return Design(config, unit).name


def cmd_report(args) -> int:
    from boards.report import is_report_cached, report

    config = _config(args)
    if not args.json and (args.no_cache or not is_report_cached(config, args.unit)):
        print("synthesizing with Yosys (first run of a config takes 10-60 s) ...", file=sys.stderr)
    result = report(config, use_cache=not args.no_cache, unit=args.unit)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{_design_name(config, args.unit)} - {result['tool']}")
    for key in ("LUT", "FF", "CARRY", "BRAM", "DSP", "LUTRAM", "SRL"):
        print(f"  {key:<7}{result[key]:>8}")
    if args.unit == "scale":
        stats = result["lut_statistics"]
        print(f"  ROM style {result['rom_style']}; shifts k: {stats['shift_histogram']}; applied/exact norm "
              f"{stats['norm_ratio_min']:.3f}..{stats['norm_ratio_max']:.3f} (mean {stats['norm_ratio_mean']:.3f})")
    elif config.strategy == "pregen" and args.unit == "generator":
        print(f"  BRAM18 equivalents {result['BRAM18_equivalent']} (analytical minimum "
              f"{result['budget']['BRAM18_equivalent']}), LUT-ROM {result['LUTRAM']}")
    elif config.strategy == "gaussian" and args.unit == "generator":
        per, ext = result["per_generator"], result["extrapolated_1024"]
        print(f"  per generator: {per['LUT']:.1f} LUT, {per['FF']:.1f} FF (hand estimate "
              f"{result['analytical_LUT'] / config.lanes:.0f} LUT, 127 FF)")
        print(f"  1024 generators (MeZO, extrapolated linearly): {ext['LUT']} LUT, {ext['FF']} FF "
              f"(PeZO Table 6: 133120 LUT, 69632 FF)")
    elif config.rewind and args.unit == "generator":
        o, b = result["overhead"], result["budget"]
        print(f"  rewind overhead: +{o['LUT']} LUT, +{o['FF']} FF (budget +{b['LUT']} LUT, +{b['FF']} FF)")
    elif args.unit == "generator":
        b = result["budget"]
        print(f"  budget: <= {b['LUT']} LUT, <= {b['FF']} FF")
    if "within_budget" in result:
        print(f"  within budget: {'yes' if result['within_budget'] else 'NO'}")
    print(f"  cells: {', '.join(f'{k} {v}' for k, v in result['cells'].items())}"
          f"{' (cached)' if result.get('cached') else ''}")
    return 0


def cmd_verilog(args) -> int:
    from boards.outdir import OutputDirError, commit_output, prepare_output
    from boards.report import generator_verilog

    config = _config(args)
    try:
        staging, replacing = prepare_output(args.out, args.force)
    except OutputDirError as exc:
        raise CLIError(str(exc)) from None
    text, top = generator_verilog(config, args.unit)
    (staging / f"{top}.v").write_text(text)
    (staging / f"{top}.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    commit_output(staging, args.out, {"command": "verilog", "config": config.to_dict()})
    print(f"{'replaced' if replacing else 'wrote'} {args.out / (top + '.v')} (+ {top}.json)")
    return 0


def cmd_build(args) -> int:
    """Main job: the generators' Verilog and the resource comparison."""
    from tqdm import tqdm

    from boards.comparison import comparison_designs, comparison_rows, format_table, write_tables
    from boards.outdir import OutputDirError, commit_output, prepare_output
    from boards.report import generator_verilog

    try:
        seed = PerturbConfig(seed=args.seed).seed
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    try:
        staging, replacing = prepare_output(args.out, args.force)
    except OutputDirError as exc:
        raise CLIError(str(exc)) from None
    designs = comparison_designs(seed)
    verilog_dir = staging / "verilog"
    verilog_dir.mkdir()
    for design in designs:
        text, top = generator_verilog(design.config, design.unit)
        stem = re.sub(r"[^A-Za-z0-9]+", "_", design.name).strip("_").lower()
        (verilog_dir / f"{stem}.v").write_text(text.replace(f"module {top}(", f"module {stem}(", 1))
        (verilog_dir / f"{stem}.json").write_text(
            json.dumps({"unit": design.unit, **design.config.to_dict()}, indent=2) + "\n")
    with tqdm(total=len(designs), desc="synthesis (Yosys xcup)", unit="design", file=sys.stderr,
              disable=args.quiet) as bar:
        rows = comparison_rows(designs, progress=bar)
    files = write_tables(rows, staging)
    commit_output(staging, args.out, {"command": "build", "seed": seed})
    print(format_table(rows))
    print()
    print(f"{'replaced' if replacing else 'wrote'} {args.out}/: verilog/ ({len(designs)} designs), "
          + ", ".join(f.name for f in files))
    return 0


def cmd_simulate(args) -> int:
    """Run the cocotb testbench of the generator on each simulator; print cycles/s."""
    import hashlib

    from sim.runner import available_simulators, cache_dir, run_bench

    config = _config(args)
    bench = {"stream": "stream", "scale": "scale"}.get(args.unit) or \
        {"otf": "urng", "pregen": "pool", "gaussian": "gaussian"}[config.strategy]
    if not isinstance(args.cycles, int) or not 1 <= args.cycles <= 10_000_000:
        raise CLIError(f"cycles must be an integer in 1..10000000, got {args.cycles!r}")
    sims = available_simulators()
    wanted = sims if args.simulator == "all" else [args.simulator]
    missing = [s for s in wanted if s not in sims]
    if missing or not wanted:
        raise CLIError(f"simulator {', '.join(missing) or 'any'} is not available here (have: "
                       f"{', '.join(sims) or 'none'}); Icarus: apt-get install -y iverilog")
    name = f"{bench}-" + hashlib.sha256(json.dumps(config.to_dict(), sort_keys=True).encode()).hexdigest()[:12]
    results = {sim: {**run_bench(bench, config, sim, cache_dir() / "simulate" / name / sim, args.cycles),
                     "mismatches": 0}
               for sim in wanted}
    if args.json:
        print(json.dumps({"config": config.to_dict(), "simulators": results}, indent=2))
    else:
        for sim, r in results.items():
            print(f"{sim:<10} {r['cycles']} cycles, 0 mismatches, {r['cycles_per_s']:.0f} cycles/s "
                  f"(build {r['build_s']:.1f} s)")
            stats = r.get("statistics")
            if stats:  # the Gaussian generator's RTL samples
                print(f"{'':<10} {stats['samples']} samples: mean {stats['mean']:+.4f}, variance "
                      f"{stats['variance']:.4f}, kurtosis {stats['kurtosis']:.3f}, KS D {stats['ks_normal_D']:.4f} "
                      f"(<= {stats['ks_normal_threshold']:.4f}), tests {'passed' if stats['passed'] else 'FAILED'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pezo", description="pezo: FPGA perturbation engines for zeroth-order on-device "
                     "training (PeZO) - golden model, Amaranth RTL, cocotb proofs, resource reports.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("build", help="main job: write the perturbation engines' Verilog and print the "
                       "resource comparison (on-the-fly, pre-generated pool, Gaussian baseline, stream units; "
                       "beside PeZO Table 6)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument("--force", action="store_true", help="replace --out even if pezo did not write it")
    p.add_argument("--seed", type=_raw, default=1, help="master seed of the generators (default 1)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("report", help="resources of one perturbation generator or stream unit alone "
                       "(Yosys, xcup)")
    _add_generator_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (keys LUT, FF, BRAM, DSP, ...)")
    p.add_argument("--no-cache", action="store_true", help="re-run synthesis even if cached")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("verilog", help="write one generator's Verilog (+ its config JSON)")
    _add_generator_args(p)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--force", action="store_true", help="replace --out even if pezo did not write it")
    p.set_defaults(func=cmd_verilog)

    p = sub.add_parser("simulate", help="run a generator's (or unit's) cocotb testbench against golden; "
                       "print cycles/s")
    _add_generator_args(p)
    p.add_argument("--simulator", choices=("icarus", "verilator", "all"), default="all")
    p.add_argument("--cycles", type=_raw, default=20_000, help="cycles to simulate (default 20000)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_simulate)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except CLIError as exc:
        print(f"pezo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pezo: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # tool failures: one line, not a traceback
        from boards.synth import SynthesisError
        if isinstance(exc, (SynthesisError, AssertionError, RuntimeError, OSError)):
            print(f"pezo: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
