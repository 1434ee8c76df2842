"""The hardware commands: ``pezo build``, ``report`` (``cli.report``), ``power``, ``verilog`` and ``simulate``.

``pezo.boards.*`` (except ``boards.flow.vivado``), ``pezo.sim.*`` and ``pezo.hw.*`` import Amaranth (about
0.1 s each time a process starts), and tqdm takes 20 ms: they are imported inside the commands that use
them, so ``pezo --help`` and the training commands do not pay for them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pezo.cli import board
from pezo.cli.args import CLIError, pezo_command, raw
from pezo.cli.generator import _add_generator_args, _config, _design_name
from pezo.cli.output import check_new_file, quoted, staged_output
from pezo.cli.report import add_report_parser

DEFAULT_BUILD_OUT = Path("build")


def cmd_verilog(args) -> int:
    from pezo.boards.flow.report import generator_verilog

    args.unit = args.unit or "generator"
    config = _config(args)
    with staged_output(args.out, args.force, {"command": "verilog", "config": config.to_dict()}) as staging:
        text, top = generator_verilog(config, args.unit)
        (staging.path / f"{top}.v").write_text(text)
        (staging.path / f"{top}.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    print(f"{'replaced' if staging.replacing else 'wrote'} {args.out / (top + '.v')} (+ {top}.json)")
    return 0


@dataclass(frozen=True)
class BuildTarget:
    """One (board, design) of ``pezo build``: what it writes, and the writer (checks its own options, writes the
    files into a staged ``--out``, prints what it wrote and what to run next; returns the exit status)."""

    summary: str
    write: Callable[[argparse.Namespace], int]


def cmd_build(args) -> int:
    """``pezo build``: the (board, design)'s writer in ``BUILD_TARGETS``."""
    from pezo.boards.zcu102 import BOARDS

    boards = (*BOARDS, ULX3S_BOARD)
    if args.board not in boards:
        raise CLIError(f"--board must be one of {', '.join(boards)}, got {args.board!r}")
    board.check_build_design(args)
    return BUILD_TARGETS[args.board, args.design].write(args)


def _build_zcu102_stream(args) -> int:
    """The ZCU102 design of one strategy: top.v, top.xdc, top.tcl, build_top.sh, config.json, ..."""
    from pezo.boards.zcu102 import write_design

    if args.rewind:
        raise CLIError("--rewind does not apply to pezo build: the board's perturbation stream always rewinds")
    config = _config(args, unit="host")
    _check_saif_input(args.saif)
    out = args.out or DEFAULT_BUILD_OUT / f"{args.board}-{config.strategy}"
    with staged_output(
        out, args.force, {"command": "build", "board": args.board, "config": config.to_dict()}, strict=True
    ) as staging:
        files = write_design(config, staging.path, saif=args.saif)
    print(f"{'replaced' if staging.replacing else 'wrote'} {out}/: {', '.join(files)}")
    vivado = shutil.which("vivado")
    if vivado is None or args.no_vivado:
        reason = "--no-vivado given" if args.no_vivado else "Vivado is not on PATH"
        print(
            f"{reason}: the design files are complete. To run synthesis, place & route, the reports "
            f"(utilisation, timing, power{' with top.saif' if args.saif else ''}) and the bitstream:\n"
            f"  cd {quoted(out)} && bash build_top.sh        # Vivado 2021.1 or later on PATH\n"
            f"then compare: {pezo_command()} report --vivado {quoted(out)}"
        )
        return 0
    result = board.run_vivado(vivado, out)
    print(
        f"{result['tool']}: {result['LUT']} LUT, {result['FF']} FF, {result['BRAM']} BRAM, {result['DSP']} DSP; "
        f"reports in {out}"
    )
    return 0


ULX3S_BOARD = "ulx3s-85f"


def _check_saif_input(path: Path | None) -> None:
    """``pezo build --saif FILE``: an existing SAIF file (its text starts with ``(SAIFILE``)."""
    if path is None:
        return
    if not path.is_file():
        raise CLIError(f"--saif {quoted(path)}: no such file (write one with pezo power --saif FILE.saif)")
    try:
        with open(path, "rb") as f:
            head = f.read(4096).lstrip()
    except OSError as exc:
        raise CLIError(f"--saif {quoted(path)}: cannot read it ({exc.strerror})") from None
    if not head.startswith(b"(SAIFILE"):
        raise CLIError(
            f"--saif {quoted(path)} is not a SAIF file (it must start with '(SAIFILE'); write one "
            "with pezo power --saif FILE.saif"
        )


def _build_ulx3s(args) -> int:
    """The open-flow board: the stream top to a bitstream with PyPI tools (Yosys, nextpnr-ecp5, ecppack)."""
    from pezo.boards import ulx3s

    for option, given in (
        ("--saif", args.saif is not None),
        ("--no-vivado", args.no_vivado),
        ("--rewind", args.rewind),
    ):
        if given:
            raise CLIError(
                f"{option} does not apply to --board {ULX3S_BOARD} (an open-flow bitstream of the "
                "stream top, which always rewinds)"
            )
    config = _config(args, unit="stream")
    out = args.out or DEFAULT_BUILD_OUT / f"{ULX3S_BOARD}-{config.strategy}"
    with staged_output(
        out, args.force, {"command": "build", "board": ULX3S_BOARD, "config": config.to_dict()}, strict=True
    ) as staging:  # a refused --out: its one error line, no progress line before it
        print(
            f"building the {ULX3S_BOARD} bitstream: Yosys synth_ecp5, nextpnr-ecp5, ecppack (30 s - 2 min) ...",
            file=sys.stderr,
        )
        result = ulx3s.build_bitstream(config, staging.path)
    print(f"{'replaced' if staging.replacing else 'wrote'} {out}/: {', '.join(result['files'])}")
    print(
        f"bitstream: {out / 'top.bit'} ({result['bytes']} bytes); the design closes at {result['fmax_mhz']:.0f} MHz "
        f"against the board's 25 MHz clock"
    )
    print(f"program it (volatile): openFPGALoader --board ulx3s '{out / 'top.bit'}'")
    return 0


BUILD_TARGETS = {
    ("zcu102", "stream"): BuildTarget(
        "the perturbation stream behind AXI4-Lite in the Zynq PS design: Vivado project files", _build_zcu102_stream
    ),
    (ULX3S_BOARD, "stream"): BuildTarget(
        "the stream top as an open-flow bitstream (Yosys, nextpnr-ecp5)", _build_ulx3s
    ),
    ("zcu102", "engine"): BuildTarget(
        "the on-device trainer: the engine top behind AXI4-Lite + AXI4 in the Zynq PS design, Vivado project files",
        lambda args: board.cmd_build_engine(args, DEFAULT_BUILD_OUT),
    ),
    (ULX3S_BOARD, "engine"): BuildTarget(
        "the UART trainer (the training set on chip) as an open-flow bitstream",
        lambda args: board.cmd_build_ulx3s_engine(args, board.engine_build_config(args), DEFAULT_BUILD_OUT),
    ),
}
"""Every (``--board``, ``--design``) of ``pezo build`` and its writer."""


def cmd_simulate(args) -> int:
    """Run the cocotb testbench of the generator on each simulator; print cycles/s."""
    from pezo.hw.strategies import strategy
    from pezo.sim.runner import available_simulators, cache_dir, run_bench

    args.unit = args.unit or "generator"
    if args.unit == "host":
        raise CLIError(
            "--unit host is simulated by the test suite (tests/hw/test_host.py); pezo simulate runs "
            "the generator, stream and scale benches"
        )
    config = _config(args)
    bench = {"stream": "stream", "scale": "scale"}.get(args.unit) or strategy(config.strategy).bench
    if not isinstance(args.cycles, int) or not 1 <= args.cycles <= 10_000_000:
        raise CLIError(f"--cycles must be an integer in 1..10000000, got {args.cycles!r}")
    sims = available_simulators()
    wanted = sims if args.simulator == "all" else [args.simulator]
    missing = [s for s in wanted if s not in sims]
    if missing or not wanted:
        raise CLIError(
            f"{'--simulator ' + ', '.join(missing) if missing else 'no simulator'} is not available "
            f"here (have: {', '.join(sims) or 'none'}); Icarus: apt-get install -y iverilog"
        )
    name = f"{bench}-" + hashlib.sha256(json.dumps(config.to_dict(), sort_keys=True).encode()).hexdigest()[:12]
    results = {
        sim: {**run_bench(bench, config, sim, cache_dir() / "simulate" / name / sim, args.cycles), "mismatches": 0}
        for sim in wanted
    }
    if args.json:
        print(json.dumps({"config": config.to_dict(), "simulators": results}, indent=2))
    else:
        for sim, r in results.items():
            print(
                f"{sim:<10} {r['cycles']} cycles, 0 mismatches, {r['cycles_per_s']:.0f} cycles/s "
                f"(build {r['build_s']:.1f} s)"
            )
            stats = r.get("statistics")
            if stats:  # the Gaussian generator's RTL samples
                print(
                    f"{'':<10} {stats['samples']} samples: mean {stats['mean']:+.4f}, variance "
                    f"{stats['variance']:.4f}, kurtosis {stats['kurtosis']:.3f}, KS D {stats['ks_normal_D']:.4f} "
                    f"(<= {stats['ks_normal_threshold']:.4f}), tests {'passed' if stats['passed'] else 'FAILED'}"
                )
    return 0


SAIF_INSTANCE_PATH = ("pezo_power_tb", "dut", "host", "stream")
"""Where the stream unit sits in the ZCU102 top (``top`` -> ``host`` -> ``stream``), below the
testbench instance that ``pezo build --saif``'s ``read_saif -strip_path pezo_power_tb/dut`` strips."""


def cmd_power(args) -> int:
    """The stream unit's switching-activity proxy (relative, not watts) and optionally its SAIF."""
    from pezo.boards.flow.comparison_rows import ACTIVITY_DIM
    from pezo.boards.flow.power import NOTE, power_proxy

    if args.rewind:
        raise CLIError("--rewind does not apply to pezo power: the perturbation stream always rewinds")
    if args.perturb_dim is None:
        args.perturb_dim = ACTIVITY_DIM
    config = _config(args, unit="stream")
    if config.perturb_dim > 1 << 16:
        raise CLIError(
            f"perturb_dim must be in 1..65536 for the activity run (simulated cycle by cycle), got {config.perturb_dim}"
        )
    if not isinstance(args.steps, int) or not 1 <= args.steps <= 100:
        raise CLIError(f"--steps must be an integer in 1..100, got {args.steps!r}")
    if args.force and args.saif is None:
        raise CLIError("--force applies with --saif FILE only (it lets pezo replace that file)")
    check_new_file("--saif", args.saif, args.force, suffix=".saif")
    if not shutil.which("iverilog"):
        raise CLIError("the activity run needs Icarus Verilog: apt-get install -y iverilog")
    print("simulating the stream unit (Icarus) and synthesising it (Yosys, cached) ...", file=sys.stderr)
    result = power_proxy(config, unit="stream", steps=args.steps, saif=args.saif, saif_instance_path=SAIF_INSTANCE_PATH)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    per = result["toggles_per_cycle"]
    print(
        f"{_design_name(config, 'stream')}: {args.steps} MeZO steps (+eps, -eps, update replay), d = "
        f"{config.perturb_dim}, {result['cycles']} cycles, {result['values']} values"
    )
    print(f"  toggles per cycle: LUT nets {per['LUT']:.1f}, FF {per['FF']:.1f}, BRAM data {per['BRAM']:.1f}")
    print(
        f"  activity proxy per cycle {result['activity_proxy_synth_scaled']:.1f} (synthesis-scaled; RTL nets "
        f"{result['activity_proxy']:.1f}), per value {result['activity_per_value_synth_scaled']:.2f}"
    )
    print(f"  {NOTE}")
    if args.saif is not None:
        print(f"wrote {args.saif} (use: {pezo_command()} build --saif {quoted(args.saif)} ...)")
    return 0


# -- the parsers ------------------------------------------------------------------------------------


def add_parsers(sub) -> None:
    """``build``, ``report``, ``power``, ``verilog`` and ``simulate`` (in this order in ``pezo --help``)."""
    p = sub.add_parser(
        "build",
        help="write the ZCU102 design of one strategy: top.v, top.xdc, top.tcl "
        "(Vivado batch flow with utilisation, timing and power reports), build_top.sh, "
        "config.json, pezo_regs.h; runs Vivado when it is on PATH",
        description="Write the ZCU102 design (the Zynq PS drives the perturbation stream "
        "through an AXI4-Lite register file). Default: on-the-fly at PeZO's sizes.",
    )
    p.add_argument(
        "--board",
        default="zcu102",
        help="target board: zcu102 (default: Verilog + XDC + Vivado Tcl, "
        "the reference board) or ulx3s-85f (open flow: the stream top, or with --design engine the whole "
        "trainer behind a UART, built to a bitstream with PyPI tools only)",
    )
    _add_generator_args(p, unit=False)
    p.add_argument(
        "--saif",
        type=Path,
        metavar="FILE",
        help="switching activity for Vivado's report_power (pezo power --saif FILE writes one)",
    )
    p.add_argument(
        "--out",
        type=Path,
        help=f"output directory (default {DEFAULT_BUILD_OUT}/<board>-<strategy>); "
        "must be empty or absent unless --force",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace a non-empty --out that holds only what pezo wrote (files pezo did not write are never deleted)",
    )
    p.add_argument("--no-vivado", action="store_true", help="only write the files, even if Vivado is on PATH")
    board.add_build_args(p)
    p.set_defaults(func=cmd_build)

    add_report_parser(sub)

    p = sub.add_parser(
        "power",
        help="switching-activity proxy of a strategy's stream unit over a "
        "representative MeZO run (relative, not watts); --saif FILE for Vivado's report_power",
        description="Simulate a strategy's perturbation stream unit (Icarus) over a few MeZO steps "
        "(+eps, -eps, update replay) and print its switching-activity proxy: toggles per cycle "
        "scaled by the synthesised cells, relative between strategies, not watts. --saif FILE.saif "
        "also writes the activity for Vivado's report_power (pezo build --saif).",
    )
    _add_generator_args(p, unit=False, perturb_dim=4096)
    p.add_argument("--steps", type=raw, default=2, help="MeZO steps simulated, 1..100 (default 2)")
    p.add_argument(
        "--saif",
        type=Path,
        metavar="FILE",
        help="also write the activity as SAIF, placed where the "
        "stream sits in the ZCU102 top (pezo build --saif FILE reads it)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --saif FILE")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_power)

    p = sub.add_parser(
        "verilog",
        help="write one generator's Verilog (+ its config JSON)",
        description="Write the Verilog of one design (a strategy's generator, or --unit stream / "
        "scale / host) and its config JSON to --out DIR (replaced only if it holds exactly what "
        "pezo verilog wrote there last time, else --force).",
    )
    _add_generator_args(p)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an --out that another pezo command wrote, or "
        "whose pezo files changed (files pezo did not write are never deleted)",
    )
    p.set_defaults(func=cmd_verilog)

    p = sub.add_parser(
        "simulate",
        help="run a generator's (or unit's) cocotb testbench against golden; print cycles/s (an alias of "
        "pezo sim generator)",
        description="Run the cocotb testbench of one design (a strategy's generator, or --unit "
        "stream / scale) on Icarus and/or Verilator, comparing every output with the golden model "
        "cycle by cycle; print cycles/s per simulator. The same command as pezo sim generator, kept as "
        "its alias.",
    )
    add_simulate_args(p)


def add_simulate_args(p) -> None:
    """The options of ``pezo sim generator`` (and its alias ``pezo simulate``)."""
    _add_generator_args(p)
    p.add_argument(
        "--simulator",
        choices=("icarus", "verilator", "all"),
        default="all",
        help="icarus, verilator or all (every one installed here) (default all)",
    )
    p.add_argument("--cycles", type=raw, default=20_000, help="cycles to simulate, 1..10000000 (default 20000)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_simulate)
