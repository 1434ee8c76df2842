"""Switching-activity runs: a unit's RTL under Icarus Verilog with a generated testbench, dumped as a VCD.

The simulation half of the activity power proxy (``pezo.boards.flow.power`` counts the VCD's toggles, classes
the nets and weighs them; this module only builds and runs the simulator, like the rest of ``pezo.sim``):

1. ``representative_stimulus``: the inputs of a MeZO use of the stream (per ZO step: ``next`` +eps and
   ceil(d / lanes) consumed vectors, ``rewind`` -eps and the same, ``rewind`` +eps and the same for the
   update replay), computed with the golden cycle model so the consumed counts are exact.
2. ``simulate_vcd``: Icarus Verilog runs the Amaranth-generated RTL under a generated testbench
   (``pezo_power_tb``, 10 ns clock, 4 reset cycles) and dumps a VCD of the unit, with the window marker
   ``pezo_power_tb.measure`` that ``pezo.boards.flow.power.toggle_counts`` counts inside.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.perturb import PerturbationStream, stream_lanes

IDLE_CYCLES = 2
RESET_CYCLES = 4
CLOCK_PERIOD_NS = 10
TB_TOP = "pezo_power_tb"
WINDOW_VAR = "measure"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


# ---- 1. stimulus ----------------------------------------------------------------------------------


def representative_stimulus(config: PerturbConfig, steps: int = 2) -> list[dict]:
    """Per-cycle inputs ``{en, next, rewind, sign}`` of a MeZO use of the stream, ``steps`` ZO steps.

    ``IDLE_CYCLES`` idle cycles, then per step: ``next`` with sign 0 (+epsilon), ``en`` until
    ceil(perturb_dim / stream_lanes) vectors were consumed (en & valid, counted on the golden model
    ``pezo.golden.rng.perturb.PerturbationStream``); ``rewind`` with sign 1 (-epsilon) and the same count;
    ``rewind`` with sign 0 and the same count (the update replay). ``sign`` is held through each pass.
    Uses ``config.perturb_dim`` as given: pass a small one (e.g. 4096) for a short run.
    """
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
                    raise RuntimeError(f"the golden stream consumed {got} of {vectors} vectors in {cycles} cycles")
    return stimulus


# ---- 2. simulation --------------------------------------------------------------------------------


def _verilog_id(name: str) -> str:
    return name if _IDENT.fullmatch(name) else f"\\{name} "


def _first_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()] or lines
    return " | ".join(errors[:count]) or "no output"


def simulate_vcd(
    verilog: str,
    top: str,
    stimulus: list[dict],
    workdir,
    *,
    clock: str = "clk",
    reset: str = "rst",
    reset_cycles: int = RESET_CYCLES,
) -> Path:
    """Simulate ``top`` (in ``verilog``) with Icarus Verilog under ``stimulus``; return the VCD path.

    The testbench ``pezo_power_tb`` (timescale 1ns/1ps, clock period 10 ns) instantiates ``top`` as
    ``dut``, holds ``reset`` for ``reset_cycles`` rising edges, then on each falling edge applies the
    next stimulus vector (read by ``$readmemh``; stable at the rising edge) and runs exactly
    ``len(stimulus)`` cycles. The VCD holds every net of ``dut`` and the window marker
    ``pezo_power_tb.measure`` (high from reset release to the end: ``pezo.boards.flow.power.toggle_counts``
    counts only then).
    """
    # the Icarus half of ``pezo.sim.runner.available_simulators``, without its Verilator set-up
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
// generated by pezo.sim.activity: drives {top} with a stimulus file for a switching-activity VCD
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
    proc = subprocess.run(
        ["iverilog", "-g2012", "-o", "sim.vvp", "-s", TB_TOP, "tb.v", "dut.v"],
        cwd=workdir,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"iverilog failed to compile {top}: {_first_lines(proc.stderr + proc.stdout)}")
    proc = subprocess.run(["vvp", "-n", "sim.vvp"], cwd=workdir, capture_output=True, text=True)
    if proc.returncode != 0 or not vcd.exists():
        raise RuntimeError(f"vvp failed (exit {proc.returncode}): {_first_lines(proc.stderr + proc.stdout)}")
    return vcd
