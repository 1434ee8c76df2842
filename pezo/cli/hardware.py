"""The hardware commands: ``pezo build``, ``report``, ``power``, ``verilog`` and ``simulate``.

``pezo.boards.*`` (except ``boards.vivado``), ``pezo.sim.*`` and ``pezo.hw.*`` import Amaranth (about
0.1 s each time a process starts), and tqdm takes 20 ms: they are imported inside the commands that use
them, so ``pezo --help`` and the training commands do not pay for them.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from pezo.boards.vivado import VivadoReportError, read_vivado_run
from pezo.cli.args import CLIError, raw
from pezo.cli.output import staged_output
from pezo.golden.config import STRATEGIES, PerturbConfig
from pezo.golden.engine.zo_engine import EngineConfig

DEFAULT_BUILD_OUT = Path("build")

# -- the generator options -----------------------------------------------------------------------------

GENERATOR_FIELDS = ("strategy", "n_rngs", "rng_bits", "seed", "rewind", "pool_size", "pool_bits", "lanes", "banks",
                    "perturb_dim", "eps_shift")
ONLY_FOR = {"n_rngs": ("otf",), "rng_bits": ("otf",), "pool_size": ("pregen",), "pool_bits": ("pregen",),
            "banks": ("pregen",), "lanes": ("pregen", "gaussian")}


def _given(args) -> list[str]:
    """Generator options given on the command line (all default to None)."""
    return [f for f in GENERATOR_FIELDS
            if getattr(args, f, None) is not None and getattr(args, f, None) is not False]


def _config(args, unit: str | None = None) -> PerturbConfig:
    """The config of the generator options (defaults filled in), checked against the unit and for options
    that do not apply to the strategy (one error line naming the field)."""
    from pezo.boards.report import check_unit

    fields = {f: getattr(args, f) for f in GENERATOR_FIELDS if getattr(args, f, None) is not None}
    strategy = fields.get("strategy", "otf")
    for field, strategies in ONLY_FOR.items():
        if field in fields and strategy in STRATEGIES and strategy not in strategies:
            raise CLIError(f"--{field.replace('_', '-')} applies to --strategy {' / '.join(strategies)} only, "
                           f"not {strategy}")
    try:
        config = PerturbConfig(**fields)
        check_unit(config, unit or getattr(args, "unit", None) or "generator")
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    return config


def _add_generator_args(p: argparse.ArgumentParser, unit: bool = True) -> None:
    p.add_argument("--strategy", help=f"perturbation strategy: {', '.join(STRATEGIES)} (default otf)"
                   + ("; report also takes engine-otf / engine-pregen (the ZO engine: PE array + stream)"
                      if unit else ""))
    if unit:
        p.add_argument("--unit", help="what to build: generator (the strategy's random source alone, default), "
                       "stream (the perturbation stream unit: source + rewind + scaling + sign), scale (the "
                       "otf scale LUT), host (the stream behind the AXI4-Lite register file)")
    p.add_argument("--n-rngs", type=raw, metavar="N", help="otf: URNGs in the array, 1..1024 (default 32)")
    p.add_argument("--rng-bits", type=raw, metavar="B", help="otf: bits per URNG, 3..32 (default 14)")
    p.add_argument("--seed", type=raw, metavar="S", help="master seed, 1..2^B-1 (default 1)")
    p.add_argument("--rewind", action="store_true", help="include the save/restore (rewind) path (otf and "
                   "gaussian generators; the pool and every stream unit always have it)")
    defaults = PerturbConfig()
    p.add_argument("--pool-size", type=raw, metavar="N",
                   help=f"pregen: values in the pool, lanes..2^20 (default {defaults.pool_size})")
    p.add_argument("--pool-bits", type=raw, metavar="W",
                   help=f"pregen: bits per pool value, 4..18 (default {defaults.pool_bits})")
    p.add_argument("--lanes", type=raw, metavar="L",
                   help=f"pregen / gaussian: values (generators) per cycle, 1..1024 (default {defaults.lanes})")
    p.add_argument("--banks", type=raw, metavar="K",
                   help=f"pregen: BRAM banks, a power of two dividing lanes (default {defaults.banks})")
    p.add_argument("--perturb-dim", type=raw, metavar="D",
                   help=f"values per perturbation, 1..2^31-1 (default {defaults.perturb_dim})")
    p.add_argument("--eps-shift", type=raw, metavar="S",
                   help=f"stream: epsilon = 2^(12-S) output LSBs, 0..24 (default {defaults.eps_shift})")


def _design_name(config: PerturbConfig, unit: str) -> str:
    from pezo.boards.comparison import Design

    return Design(config, unit).name


# -- pezo report -------------------------------------------------------------------------------------

def cmd_report(args) -> int:
    from pezo.boards.report import ENGINE_STRATEGIES, is_report_cached, report

    if not _given(args) and args.unit is None:
        return _report_table(args)
    if args.vivado or args.csv or args.plot or args.out:
        raise CLIError("--vivado, --csv, --plot and --out belong to the comparison table (pezo report without "
                       "generator options); one design's report is printed as text or --json")
    if args.strategy in ENGINE_STRATEGIES:
        return _report_engine(args)
    args.unit = args.unit or "generator"
    config = _config(args)
    if not args.json and (args.no_cache or not is_report_cached(config, args.unit)):
        print("synthesizing with Yosys (first run of a config takes 10-60 s) ...", file=sys.stderr)
    result = report(config, use_cache=not args.no_cache, unit=args.unit)
    result.update(_timing(config, args.unit, result["LUT"], args))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{_design_name(config, args.unit)} - {result['tool']}")
    for key in ("LUT", "FF", "CARRY", "BRAM", "DSP", "LUTRAM", "SRL"):
        print(f"  {key:<7}{result[key]:>8}")
    _print_timing(result, args)
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


ENGINE_REPORT_FIELDS = {"seed": "seed", "eps_shift": "eps_shift", "rng_bits": "rng_bits", "pool_size": "pool_size",
                        "pool_bits": "pool_bits"}


def _report_engine(args) -> int:
    """Resources of the ZO engine (PE array + stream + controller) at its default size."""
    from pezo.boards.report import ENGINE_STRATEGIES, engine_report

    strategy = ENGINE_STRATEGIES[args.strategy]
    other = [f for f in _given(args) if f != "strategy" and f not in ENGINE_REPORT_FIELDS]
    if args.unit is not None or other:
        bad = "--unit" if args.unit is not None else "--" + other[0].replace("_", "-")
        raise CLIError(f"{bad} does not apply to --strategy {args.strategy} (the engine takes --seed, --eps-shift, "
                       "--rng-bits (otf), --pool-size and --pool-bits (pregen))")
    fields = {f: getattr(args, f) for f in ENGINE_REPORT_FIELDS if getattr(args, f, None) is not None}
    for field, only in (("rng_bits", "otf"), ("pool_size", "pregen"), ("pool_bits", "pregen")):
        if field in fields and strategy != only:
            raise CLIError(f"--{field.replace('_', '-')} applies to --strategy engine-{only} only")
    try:
        config = EngineConfig(strategy=strategy, **fields)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if not args.json:
        print("synthesizing the engine with Yosys (first run takes 1-3 min) ...", file=sys.stderr)
    result = engine_report(config, use_cache=not args.no_cache)
    result.update(_timing(config, "engine", result["LUT"], args))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"ZO engine {config.rows}x{config.cols} INT8 MAC array + {strategy} stream - {result['tool']}")
    for key in ("LUT", "FF", "CARRY", "BRAM", "DSP", "LUTRAM", "SRL"):
        print(f"  {key:<7}{result[key]:>8}")
    print(f"  DSP48E2 {result['DSP']} (analytical {result['analytical_DSP']}: {config.macs} MACs + {config.cols} "
          f"g*p lanes); BRAM36 {result['BRAM36']:g} (estimate {result['analytical_BRAM36']:g})")
    print(f"  cycle bound per ZO step (B={config.batch}, |W|={config.weights}): {result['cycle_bound']}")
    _print_timing(result, args)
    print(f"  cells: {', '.join(f'{k} {v}' for k, v in result['cells'].items())}"
          f"{' (cached)' if result.get('cached') else ''}")
    return 0


def _timing(config, unit: str, luts: int, args) -> dict:
    """The timing keys of one design (``boards.timing.unit_timing``; None each with --no-timing)."""
    from pezo.boards.timing import TIMING_KEYS, is_timing_cached, unit_timing, unit_verilog

    if args.no_timing:
        return {k: None for k in TIMING_KEYS}
    if not args.json and (args.no_cache or not is_timing_cached(unit_verilog(config, unit)[2])):
        print("placing and routing on ECP5 with nextpnr, 3 seeds (10 s - 3 min; --no-timing skips it) ...",
              file=sys.stderr)
    result = unit_timing(config, unit, luts=luts, use_cache=not args.no_cache)
    if not args.timing_path:
        result.pop("critical_path")
    return result


def _print_timing(result: dict, args) -> None:
    if result.get("fmax_mhz") is None:
        return
    throughput = result["throughput_values_per_s"]
    print(f"  Fmax {result['fmax_mhz']:.1f} MHz ({result['fmax_target']}, nextpnr, median of seeds "
          f"{', '.join(result['fmax_per_seed'])}: {', '.join(f'{v:.0f}' for v in result['fmax_per_seed'].values())}); "
          f"xcup logic levels {result['logic_levels']}")
    if throughput:
        print(f"  throughput {throughput / 1e6:.0f} Mvalues/s ({result['values_per_cycle']} a cycle), "
              f"{result['throughput_per_lut']:.0f} values/s per LUT")
    print(f"  critical path: {result['critical_path_ends']}")
    if args.timing_path:
        print("\n".join(f"    {line}" for line in result["critical_path"]))


def _report_table(args) -> int:
    """Every strategy at its defaults: the Table-6-shaped comparison (+ JSON list, CSV, PNG, --out DIR)."""
    from tqdm import tqdm

    from pezo.boards.comparison import (comparison_designs, comparison_rows, format_table, plot_resources,
                                        vivado_row, write_csv, write_tables)

    if args.timing_path:
        raise CLIError("--timing-path prints one design's critical path: give the design (--strategy, --unit, ...)")
    for option, path in (("--csv", args.csv), ("--plot", args.plot)):
        if path is not None and (path.is_dir() or not path.parent.is_dir()):
            raise CLIError(f"{option} {path}: must be a file in an existing directory")
    if args.plot is not None and args.plot.suffix.lower() != ".png":
        raise CLIError(f"--plot {args.plot}: the plot is a PNG; name the file *.png")
    vivado = None
    if args.vivado is not None:
        try:
            vivado = vivado_row(args.vivado)
        except VivadoReportError as exc:
            raise CLIError(str(exc)) from None
    staged = (staged_output(args.out, args.force, {"command": "report"}) if args.out is not None
              else contextlib.nullcontext())
    with staged as staging:
        activity = not args.no_activity
        if activity and not shutil.which("iverilog"):
            print("pezo: note: Icarus Verilog is not installed (apt-get install -y iverilog): the table is printed "
                  "without the switching-activity proxy", file=sys.stderr)
            activity = False
        designs = comparison_designs()
        work = " + ".join(["synthesis (Yosys xcup)", *(["activity"] if activity else []),
                           *([] if args.no_timing else ["place and route (nextpnr-ecp5)"])])
        with tqdm(total=len(designs), desc=work, unit="design", file=sys.stderr,
                  disable=args.quiet or args.json) as bar:
            rows = comparison_rows(designs, progress=bar, activity=activity, timing=not args.no_timing)
        if vivado is not None:
            rows.append(vivado)
        if args.csv is not None:
            write_csv(rows, args.csv)
        if args.plot is not None:
            plot_resources(rows, args.plot)
        if staging is not None:
            write_tables(rows, staging.path)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(format_table(rows))
    written = [str(p) for p in (args.csv, args.plot) if p is not None]
    if args.out is not None:
        written.append(f"{args.out}/resources.{{md,json,csv,png}}")
    if written:
        print(f"\nwrote {', '.join(written)}")
    return 0


# -- pezo verilog, build, simulate, power ---------------------------------------------------------------

def cmd_verilog(args) -> int:
    from pezo.boards.report import generator_verilog

    args.unit = args.unit or "generator"
    config = _config(args)
    with staged_output(args.out, args.force, {"command": "verilog", "config": config.to_dict()}) as staging:
        text, top = generator_verilog(config, args.unit)
        (staging.path / f"{top}.v").write_text(text)
        (staging.path / f"{top}.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    print(f"{'replaced' if staging.replacing else 'wrote'} {args.out / (top + '.v')} (+ {top}.json)")
    return 0


def cmd_build(args) -> int:
    """The ZCU102 design of one strategy: top.v, top.xdc, top.tcl, build_top.sh, config.json, ..."""
    from pezo.boards.zcu102 import BOARDS, write_design

    boards = (*BOARDS, ULX3S_BOARD)
    if args.board not in boards:
        raise CLIError(f"board must be one of {', '.join(boards)}, got {args.board!r}")
    if args.board == ULX3S_BOARD:
        return _build_ulx3s(args)
    if args.rewind:
        raise CLIError("--rewind does not apply to pezo build: the board's perturbation stream always rewinds")
    config = _config(args, unit="host")
    if args.saif is not None and not args.saif.is_file():
        raise CLIError(f"--saif {args.saif}: no such file (write one with pezo power --saif FILE)")
    out = args.out or DEFAULT_BUILD_OUT / f"{args.board}-{config.strategy}"
    with staged_output(out, args.force, {"command": "build", "board": args.board, "config": config.to_dict()},
                       strict=True) as staging:
        files = write_design(config, staging.path, saif=args.saif)
    print(f"{'replaced' if staging.replacing else 'wrote'} {out}/: {', '.join(files)}")
    vivado = shutil.which("vivado")
    if vivado is None or args.no_vivado:
        reason = "--no-vivado given" if args.no_vivado else "Vivado is not on PATH"
        print(f"{reason}: the design files are complete. To run synthesis, place & route, the reports "
              f"(utilisation, timing, power{' with top.saif' if args.saif else ''}) and the bitstream:\n"
              f"  cd {out} && bash build_top.sh        # Vivado 2021.1 or later on PATH\n"
              f"then compare: pezo report --vivado {out}")
        return 0
    print(f"running Vivado ({vivado}) in {out}; log: {out}/top.log ...", file=sys.stderr)
    proc = subprocess.run(["bash", "build_top.sh"], cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"Vivado failed (exit {proc.returncode}); see {out}/top.log")
    result = read_vivado_run(out)
    print(f"{result['tool']}: {result['LUT']} LUT, {result['FF']} FF, {result['BRAM']} BRAM, {result['DSP']} DSP; "
          f"reports in {out}")
    return 0


ULX3S_BOARD = "ulx3s-85f"


def _build_ulx3s(args) -> int:
    """The open-flow board: the stream top to a bitstream with PyPI tools (Yosys, nextpnr-ecp5, ecppack)."""
    from pezo.boards import ulx3s

    for option, given in (("--saif", args.saif is not None), ("--no-vivado", args.no_vivado),
                          ("--rewind", args.rewind)):
        if given:
            raise CLIError(f"{option} does not apply to --board {ULX3S_BOARD} (an open-flow bitstream of the "
                           "stream top, which always rewinds)")
    config = _config(args, unit="stream")
    out = args.out or DEFAULT_BUILD_OUT / f"{ULX3S_BOARD}-{config.strategy}"
    print(f"building the {ULX3S_BOARD} bitstream: Yosys synth_ecp5, nextpnr-ecp5, ecppack (30 s - 2 min) ...",
          file=sys.stderr)
    with staged_output(out, args.force, {"command": "build", "board": ULX3S_BOARD, "config": config.to_dict()},
                       strict=True) as staging:
        result = ulx3s.build_bitstream(config, staging.path)
    print(f"{'replaced' if staging.replacing else 'wrote'} {out}/: {', '.join(result['files'])}")
    print(f"bitstream: {out / 'top.bit'} ({result['bytes']} bytes); the design closes at {result['fmax_mhz']:.0f} MHz "
          f"against the board's 25 MHz clock")
    print(f"program it (volatile): openFPGALoader --board ulx3s '{out / 'top.bit'}'")
    return 0


def cmd_simulate(args) -> int:
    """Run the cocotb testbench of the generator on each simulator; print cycles/s."""
    from pezo.hw.strategies import strategy
    from pezo.sim.runner import available_simulators, cache_dir, run_bench

    args.unit = args.unit or "generator"
    if args.unit == "host":
        raise CLIError("unit 'host' is simulated by the test suite (tests/test_host.py); pezo simulate runs "
                       "the generator, stream and scale benches")
    config = _config(args)
    bench = {"stream": "stream", "scale": "scale"}.get(args.unit) or strategy(config.strategy).bench
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


SAIF_INSTANCE_PATH = ("pezo_power_tb", "dut", "host", "stream")
"""Where the stream unit sits in the ZCU102 top (``top`` -> ``host`` -> ``stream``), below the
testbench instance that ``pezo build --saif``'s ``read_saif -strip_path pezo_power_tb/dut`` strips."""


def cmd_power(args) -> int:
    """The stream unit's switching-activity proxy (relative, not watts) and optionally its SAIF."""
    from pezo.boards.comparison import ACTIVITY_DIM
    from pezo.boards.power import NOTE, power_proxy

    if args.rewind:
        raise CLIError("--rewind does not apply to pezo power: the perturbation stream always rewinds")
    if args.perturb_dim is None:
        args.perturb_dim = ACTIVITY_DIM
    config = _config(args, unit="stream")
    if config.perturb_dim > 1 << 16:
        raise CLIError(f"perturb_dim must be in 1..65536 for the activity run (simulated cycle by cycle), "
                       f"got {config.perturb_dim}")
    if not isinstance(args.steps, int) or not 1 <= args.steps <= 100:
        raise CLIError(f"steps must be an integer in 1..100, got {args.steps!r}")
    if args.saif is not None and (args.saif.is_dir() or not args.saif.parent.is_dir()):
        raise CLIError(f"--saif {args.saif}: must be a file in an existing directory")
    if not shutil.which("iverilog"):
        raise CLIError("the activity run needs Icarus Verilog: apt-get install -y iverilog")
    if not args.json:
        print("simulating the stream unit (Icarus) and synthesising it (Yosys, cached) ...", file=sys.stderr)
    result = power_proxy(config, unit="stream", steps=args.steps, saif=args.saif,
                         saif_instance_path=SAIF_INSTANCE_PATH)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    per = result["toggles_per_cycle"]
    print(f"{_design_name(config, 'stream')}: {args.steps} MeZO steps (+eps, -eps, update replay), d = "
          f"{config.perturb_dim}, {result['cycles']} cycles, {result['values']} values")
    print(f"  toggles per cycle: LUT nets {per['LUT']:.1f}, FF {per['FF']:.1f}, BRAM data {per['BRAM']:.1f}")
    print(f"  activity proxy per cycle {result['activity_proxy_synth_scaled']:.1f} (synthesis-scaled; RTL nets "
          f"{result['activity_proxy']:.1f}), per value {result['activity_per_value_synth_scaled']:.2f}")
    print(f"  {NOTE}")
    if args.saif is not None:
        print(f"wrote {args.saif} (use: pezo build --saif {args.saif} ...)")
    return 0


# -- the parsers ------------------------------------------------------------------------------------

def add_parsers(sub) -> None:
    """``build``, ``report``, ``power``, ``verilog`` and ``simulate`` (in this order in ``pezo --help``)."""
    p = sub.add_parser("build", help="write the ZCU102 design of one strategy: top.v, top.xdc, top.tcl "
                       "(Vivado batch flow with utilisation, timing and power reports), build_top.sh, "
                       "config.json, pezo_regs.h; runs Vivado when it is on PATH",
                       description="Write the ZCU102 design (the Zynq PS drives the perturbation stream "
                       "through an AXI4-Lite register file). Default: on-the-fly at PeZO's sizes.")
    p.add_argument("--board", default="zcu102", help="target board: zcu102 (default: Verilog + XDC + Vivado Tcl, "
                   "the reference board) or ulx3s-85f (open flow: the stream top built to a bitstream with PyPI "
                   "tools only)")
    _add_generator_args(p, unit=False)
    p.add_argument("--saif", type=Path, metavar="FILE", help="switching activity for Vivado's report_power "
                   "(pezo power --saif FILE writes one)")
    p.add_argument("--out", type=Path, help=f"output directory (default {DEFAULT_BUILD_OUT}/<board>-<strategy>); "
                   "must be empty or absent unless --force")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.add_argument("--no-vivado", action="store_true", help="only write the files, even if Vivado is on PATH")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("report", help="without generator options: every strategy side by side (PeZO Table 6 "
                       "shape, %% of ZCU102, estimate, paper, activity); with them: one design (Yosys, xcup)",
                       description="Without generator options, synthesise every strategy (cached) and print "
                       "the comparison table; with options (--strategy, --n-rngs, ...), report one design.")
    _add_generator_args(p)
    p.add_argument("--json", action="store_true", help="print JSON: a list of rows (table) or one object "
                   "(one design); keys LUT, FF, BRAM, DSP, strategy, unit, ...")
    p.add_argument("--no-cache", action="store_true", help="re-run synthesis even if cached")
    p.add_argument("--csv", type=Path, metavar="FILE", help="table: also write it as CSV")
    p.add_argument("--plot", type=Path, metavar="FILE", help="table: also write a PNG bar chart")
    p.add_argument("--out", type=Path, metavar="DIR", help="table: write resources.{md,json,csv,png} to DIR")
    p.add_argument("--force", action="store_true", help="table: replace a --out DIR pezo did not write")
    p.add_argument("--vivado", type=Path, metavar="RUN_DIR", help="table: add the post-place (or post-synthesis) "
                   "utilisation of a Vivado run of pezo build's files")
    p.add_argument("--no-activity", action="store_true", help="table: skip the switching-activity proxy "
                   "(it needs Icarus)")
    p.add_argument("--no-timing", action="store_true", help="skip the timing columns (fmax_mhz, logic_levels, "
                   "throughput_values_per_s: place and route on ECP5-85 -6 with nextpnr-ecp5, 3 seeds, cached)")
    p.add_argument("--timing-path", action="store_true", help="one design: print its critical path (nextpnr's "
                   "report of the median seed) and add it to --json as critical_path")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("power", help="switching-activity proxy of a strategy's stream unit over a "
                       "representative MeZO run (relative, not watts); --saif FILE for Vivado's report_power")
    _add_generator_args(p, unit=False)
    p.add_argument("--steps", type=raw, default=2, help="MeZO steps simulated, 1..100 (default 2)")
    p.add_argument("--saif", type=Path, metavar="FILE", help="also write the activity as SAIF, placed where the "
                   "stream sits in the ZCU102 top (pezo build --saif FILE reads it)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_power)

    p = sub.add_parser("verilog", help="write one generator's Verilog (+ its config JSON)")
    _add_generator_args(p)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--force", action="store_true", help="replace --out even if pezo did not write it")
    p.set_defaults(func=cmd_verilog)

    p = sub.add_parser("simulate", help="run a generator's (or unit's) cocotb testbench against golden; "
                       "print cycles/s")
    _add_generator_args(p)
    p.add_argument("--simulator", choices=("icarus", "verilator", "all"), default="all")
    p.add_argument("--cycles", type=raw, default=20_000, help="cycles to simulate (default 20000)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_simulate)
