"""``pezo report``: one design's resources and timing, or every strategy side by side (the main job's table).

``pezo.boards.*`` import Amaranth (about 0.1 s each time a process starts), and tqdm takes 20 ms: they are
imported inside the commands that use them, so ``pezo --help`` does not pay for them.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from pathlib import Path

from pezo.boards.flow.vivado import VivadoReportError
from pezo.cli.args import CLIError, option_error
from pezo.cli.cluster import add_executor_args, check_executor_args, executor_from_args
from pezo.cli.generator import _add_generator_args, _config, _design_name, _given
from pezo.cli.net import add_net_path_args, check_hardware_data, resolve_net
from pezo.cli.output import check_new_file, quoted, staged_output
from pezo.cli.timing import print_timing, timing_keys
from pezo.golden.engine.net_file import net_file_config
from pezo.golden.engine.zo_engine import EngineConfig


def cmd_report(args) -> int:
    from pezo.boards.flow.report import ENGINE_STRATEGIES, is_report_cached, report

    check_hardware_data(args)
    if not getattr(args, "no_timing", False):  # a bad time limit is refused before any synthesis
        from pezo.boards.flow.tools import pnr_timeout

        try:
            pnr_timeout()
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    if args.net and args.strategy not in ENGINE_STRATEGIES:
        raise CLIError(f"--net applies to --strategy {' or '.join(ENGINE_STRATEGIES)} only (the network engine)")
    if not _given(args) and args.unit is None:
        return _report_table(args)
    if args.vivado or args.csv or args.plot or args.out:
        raise CLIError(
            "--vivado, --csv, --plot and --out belong to the comparison table (pezo report without "
            "generator options); one design's report is printed as text or --json"
        )
    if args.jobs is not None or args.scheduler is not None:
        raise CLIError(
            "--jobs and --scheduler spread the comparison table's designs (pezo report without "
            "generator options); one design is one synthesis"
        )
    if args.brief:
        raise CLIError(
            "--brief shortens the comparison table (pezo report without generator options); one "
            "design's report is printed in full as text or --json"
        )
    if args.backprop and not (args.net and args.strategy in ENGINE_STRATEGIES):
        raise CLIError("--backprop applies to --strategy engine-otf|engine-pregen with --net (the network engine)")
    if args.strategy in ENGINE_STRATEGIES:
        return _report_engine(args)
    args.unit = args.unit or "generator"
    config = _config(args)
    if args.no_cache or not is_report_cached(config, args.unit):  # stderr, so with --json too
        print("synthesizing with Yosys (first run of a config takes 10-60 s) ...", file=sys.stderr)
    result = report(config, use_cache=not args.no_cache, unit=args.unit)
    result.update(timing_keys(config, args.unit, result["LUT"], args))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{_design_name(config, args.unit)} - {result['tool']}")
    for key in ("LUT", "FF", "CARRY", "BRAM", "DSP", "LUTRAM", "SRL"):
        print(f"  {key:<7}{result[key]:>8}")
    print_timing(result, args)
    if args.unit == "scale":
        stats = result["lut_statistics"]
        print(
            f"  ROM style {result['rom_style']}; shifts k: {stats['shift_histogram']}; applied/exact norm "
            f"{stats['norm_ratio_min']:.3f}..{stats['norm_ratio_max']:.3f} (mean {stats['norm_ratio_mean']:.3f})"
        )
    elif config.strategy == "pregen" and args.unit == "generator":
        print(
            f"  BRAM18 equivalents {result['BRAM18_equivalent']} (analytical minimum "
            f"{result['budget']['BRAM18_equivalent']}), LUT-ROM {result['LUTRAM']}"
        )
    elif config.strategy == "gaussian" and args.unit == "generator":
        per, ext = result["per_generator"], result["extrapolated_1024"]
        print(
            f"  per generator: {per['LUT']:.1f} LUT, {per['FF']:.1f} FF (hand estimate "
            f"{result['analytical_LUT'] / config.lanes:.0f} LUT, 127 FF)"
        )
        print(
            f"  1024 generators (MeZO, extrapolated linearly): {ext['LUT']} LUT, {ext['FF']} FF "
            f"(PeZO Table 6: 133120 LUT, 69632 FF)"
        )
    elif config.rewind and args.unit == "generator":
        o, b = result["overhead"], result["budget"]
        print(f"  rewind overhead: +{o['LUT']} LUT, +{o['FF']} FF (budget +{b['LUT']} LUT, +{b['FF']} FF)")
    elif args.unit == "generator":
        b = result["budget"]
        print(f"  budget: <= {b['LUT']} LUT, <= {b['FF']} FF")
    if "within_budget" in result:
        print(f"  within budget: {'yes' if result['within_budget'] else 'NO'}")
    print(
        f"  cells: {', '.join(f'{k} {v}' for k, v in result['cells'].items())}"
        f"{' (cached)' if result.get('cached') else ''}"
    )
    return 0


ENGINE_REPORT_FIELDS = {
    "seed": "seed",
    "eps_shift": "eps_shift",
    "rng_bits": "rng_bits",
    "pool_size": "pool_size",
    "pool_bits": "pool_bits",
    "lfsr_leap": "lfsr_leap",
    "lfsr_bit_order": "lfsr_bit_order",
}


def _report_engine(args) -> int:
    """Resources of the ZO engine (PE array + stream + controller) at its default size."""
    from pezo.boards.flow.report import ENGINE_STRATEGIES, engine_report

    strategy = ENGINE_STRATEGIES[args.strategy]
    other = [f for f in _given(args) if f != "strategy" and f not in ENGINE_REPORT_FIELDS]
    if args.unit == "board" and not other:  # the engine top (pezo.cli.board)
        from pezo.cli.board import cmd_report_board

        return cmd_report_board(args, strategy)
    if args.unit is not None or other:
        bad = "--unit" if args.unit is not None else "--" + other[0].replace("_", "-")
        raise CLIError(
            f"{bad} does not apply to --strategy {args.strategy} (the engine takes --seed, --eps-shift, "
            "--rng-bits, --lfsr-leap, --lfsr-bit-order (otf), --pool-size and --pool-bits (pregen))"
        )
    fields = {f: getattr(args, f) for f in ENGINE_REPORT_FIELDS if getattr(args, f, None) is not None}
    for field, only in (
        ("rng_bits", "otf"),
        ("lfsr_leap", "otf"),
        ("lfsr_bit_order", "otf"),
        ("pool_size", "pregen"),
        ("pool_bits", "pregen"),
    ):
        if field in fields and strategy != only:
            raise CLIError(f"--{field.replace('_', '-')} applies to --strategy engine-{only} only")
    if args.backprop:
        fields["backprop"] = True
    try:
        config = (
            net_file_config(resolve_net(args), strategy=strategy, **fields)
            if args.net
            else EngineConfig().replace(strategy=strategy, **fields)
        )
    except ValueError as exc:
        raise option_error(exc, (*ENGINE_REPORT_FIELDS, "backprop"), fields) from None
    print("synthesizing the engine with Yosys (first run takes 1-3 min) ...", file=sys.stderr)  # stderr: --json too
    if args.net:
        return _report_net_engine(config, args)
    result = engine_report(config, use_cache=not args.no_cache)
    result.update(timing_keys(config, "engine", result["LUT"], args))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"ZO engine {config.array.rows}x{config.array.cols} INT8 MAC array + {strategy} stream - {result['tool']}")
    for key in ("LUT", "FF", "CARRY", "BRAM", "DSP", "LUTRAM", "SRL"):
        print(f"  {key:<7}{result[key]:>8}")
    print(
        f"  DSP48E2 {result['DSP']} (analytical {result['analytical_DSP']}: {config.array.macs} MACs + "
        f"{config.array.cols} "
        f"g*p lanes); BRAM36 {result['BRAM36']:g} (estimate {result['analytical_BRAM36']:g})"
    )
    print(f"  cycle bound per ZO step (B={config.array.batch}, |W|={config.weights}): {result['cycle_bound']}")
    print_timing(result, args)
    print(
        f"  cells: {', '.join(f'{k} {v}' for k, v in result['cells'].items())}"
        f"{' (cached)' if result.get('cached') else ''}"
    )
    return 0


def _report_net_engine(config, args) -> int:
    from pezo.boards.flow.report import net_engine_report

    result = net_engine_report(config, use_cache=not args.no_cache)
    result.update(timing_keys(config, "engine", result["LUT"], args))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"ZO network engine {config.name} ({', '.join(result['layers'])}) on a "
        f"{config.array.rows}x{config.array.cols} INT8 "
        f"MAC array + {config.stream.strategy} stream - {result['tool']}"
    )
    for key in ("LUT", "FF", "CARRY", "BRAM", "DSP", "LUTRAM", "SRL"):
        print(f"  {key:<7}{result[key]:>8}")
    print(f"  DSP48E2 {result['DSP']} (analytical {result['analytical_DSP']}); BRAM36 {result['BRAM36']:g}")
    print(f"  cycle bound per ZO step (B={config.array.batch}, |W|={config.weights}): {result['cycle_bound']}")
    print_timing(result, args)
    return 0


def _report_table(args) -> int:
    """Every strategy at its defaults: the Table-6-shaped comparison (+ JSON list, CSV, PNG, --out DIR)."""
    from tqdm import tqdm

    from pezo.boards.flow.comparison_rows import comparison_designs, comparison_rows, vivado_row
    from pezo.boards.flow.comparison_table import format_table, plot_resources, write_csv, write_tables

    if args.timing_path:
        raise CLIError("--timing-path prints one design's critical path: give the design (--strategy, --unit, ...)")
    if args.plot is not None and args.plot.suffix.lower() != ".png":
        raise CLIError(f"--plot {quoted(args.plot)}: the plot is a PNG; name the file *.png")
    check_new_file("--csv", args.csv, args.force)
    check_new_file("--plot", args.plot, args.force)
    check_executor_args(args)
    vivado = None
    if args.vivado is not None:
        try:
            vivado = vivado_row(args.vivado)
        except VivadoReportError as exc:
            raise CLIError(str(exc)) from None
    staged = (
        staged_output(args.out, args.force, {"command": "report"}) if args.out is not None else contextlib.nullcontext()
    )
    with executor_from_args(args) as executor, staged as staging:
        activity = not args.no_activity
        if activity and not shutil.which("iverilog"):
            print(
                "pezo: note: Icarus Verilog is not installed (apt-get install -y iverilog): the table is printed "
                "without the switching-activity proxy",
                file=sys.stderr,
            )
            activity = False
        designs = comparison_designs()
        work = " + ".join(
            [
                "synthesis (Yosys xcup)",
                *(["activity"] if activity else []),
                *([] if args.no_timing else ["place and route (nextpnr-ecp5)"]),
            ]
        )
        with tqdm(
            total=len(designs), desc=work, unit="design", file=sys.stderr, disable=args.quiet
        ) as bar:  # stderr: --json keeps stdout clean
            rows = comparison_rows(
                designs,
                progress=bar,
                activity=activity,
                timing=not args.no_timing,
                executor=executor,
                use_cache=not args.no_cache,
            )
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
    if args.brief:
        print(brief_summary(rows, args.out))
        return 0
    print(format_table(rows))
    written = [str(p) for p in (args.csv, args.plot) if p is not None]
    if args.out is not None:
        written.append(f"{args.out}/resources.{{md,json,csv,png}}")
    if written:
        print(f"\nwrote {', '.join(written)}")
    return 0


def brief_summary(rows: list[dict], out: Path | None) -> str:
    """The end of ``make run``: the PeZO generators and the ZO engines in a few lines, where the full tables
    are, and the next commands."""
    from pezo.cli.output import quoted

    picked = [
        r
        for r in rows
        if r["unit"] == "generator"
        and r.get("paper_LUT") is not None
        and r["strategy"] != "otf"
        or r["design"] == "otf 32 x 14"
    ]
    picked += [r for r in rows if r["unit"] in ("engine", "board")]
    width = max(len(r["design"]) for r in picked)
    lines = ["Resources (Yosys synth_xilinx xcup, out of context; PeZO Table 6 where it reports the design):"]
    for r in picked:
        paper = f"   (paper: {r['paper_LUT']} LUT)" if r.get("paper_LUT") else ""
        lines.append(
            f"  {r['design']:<{width}} {r['LUT']:>7} LUT {r['FF']:>7} FF {r['BRAM']:>3} BRAM {r['DSP']:>3} DSP{paper}"
        )
    timed = any(r.get("fmax_mhz") is not None for r in rows)
    if out is not None:
        lines.append(
            f"Every design, estimates, activity{' and timing' if timed else ''}: "
            f"{quoted(str(out) + '/resources.md')} (+ .json, .csv, .png)"
        )
    if not timed:
        lines.append(
            "Fmax of every design (nextpnr-ecp5 place and route, 3 seeds; long when cold, then cached): "
            f".venv/bin/pezo report --out {quoted(str(out or 'build/report'))}"
        )
    lines.append("Next: .venv/bin/pezo --help    (every command)    make test    (the whole test suite)")
    return "\n".join(lines)


# -- pezo verilog, build, simulate, power ---------------------------------------------------------------


def add_report_parser(sub) -> None:
    p = sub.add_parser(
        "report",
        help="without generator options: every strategy side by side (PeZO Table 6 "
        "shape, %% of ZCU102, estimate, paper, activity); with them: one design (Yosys, xcup)",
        description="Without generator options, synthesise every strategy (cached) and print "
        "the comparison table; with options (--strategy, --n-rngs, ...), report one design.",
    )
    _add_generator_args(p, engine=True)
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON: a list of rows (table) or one object "
        "(one design); keys LUT, FF, BRAM, DSP, strategy, unit, ...",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="re-run synthesis, place and route (and the table's activity runs) even if cached",
    )
    add_net_path_args(
        p,
        "with --strategy engine-otf|engine-pregen: the network engine generated for this network, a built-in "
        "name, a network file or an ONNX model (default: the head engine)",
    )
    p.add_argument(
        "--backprop",
        action="store_true",
        help="with --strategy engine-otf|engine-pregen --net: the engine with its backprop tail (the elastic "
        "trainer: SPLIT and BP_BITS registers; a square array)",
    )
    p.add_argument("--csv", type=Path, metavar="FILE", help="table: also write it as CSV")
    p.add_argument("--plot", type=Path, metavar="FILE", help="table: also write a PNG bar chart")
    p.add_argument("--out", type=Path, metavar="DIR", help="table: write resources.{md,json,csv,png} to DIR")
    p.add_argument(
        "--force",
        action="store_true",
        help="table: replace an existing --csv / --plot file, or a "
        "--out DIR that another pezo command wrote or whose pezo files changed (files pezo did not write "
        "are never deleted)",
    )
    p.add_argument(
        "--vivado",
        type=Path,
        metavar="RUN_DIR",
        help="table: add the post-place (or post-synthesis) utilisation of a Vivado run of pezo build's files",
    )
    p.add_argument(
        "--no-activity", action="store_true", help="table: skip the switching-activity proxy (it needs Icarus)"
    )
    p.add_argument(
        "--no-timing",
        action="store_true",
        help="skip the timing columns (fmax_mhz, logic_levels, "
        "throughput_values_per_s: place and route on ECP5-85 -6 with nextpnr-ecp5, 3 seeds, cached)",
    )
    p.add_argument(
        "--timing-path",
        action="store_true",
        help="one design: print its critical path (nextpnr's "
        "report of the median seed) and add it to --json as critical_path",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_executor_args(p, "table's designs (synthesis, activity, place and route)")
    p.add_argument(
        "--brief",
        action="store_true",
        help="table: print a short comparison (the PeZO generators "
        "and the ZO engines), where the full tables are and the next commands (what make run ends with)",
    )
    p.set_defaults(func=cmd_report)
