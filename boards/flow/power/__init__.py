"""Switching-activity power PROXY of a perturbation unit, without Vivado. Not watts.

What it does, per strategy (otf / pregen / gaussian) of the ``stream`` unit:

1. ``representative_stimulus`` (``pezo.sim.activity``): the inputs of a MeZO use of the stream (per ZO
   step: ``next`` +eps and ceil(d / lanes) consumed vectors, ``rewind`` -eps and the same, ``rewind`` +eps
   and the same for the update replay), computed with the golden cycle model so the consumed counts are
   exact.
2. ``simulate_vcd`` (``pezo.sim.activity``): Icarus Verilog runs the Amaranth-generated RTL under a
   generated testbench (``pezo_power_tb``, 10 ns clock, 4 reset cycles) and dumps a VCD of the unit.
3. ``toggle_counts`` (``.toggles``): per net and bit, 0<->1 toggles (x/z transitions excluded), the time in
   each state (T0/T1/TX, for SAIF) and the value at each rising clock edge, inside the measurement window
   only.
4. ``classify_nets`` (``.nets``): Yosys (``proc; flatten; memory_collect``) names the driver of every RTL
   net bit: ``FF`` (a flip-flop's Q), ``BRAM`` (read data of a block-RAM-style memory), ``LUT`` (any other
   logic), ``input`` (a top-level input), ``const`` (constant or undriven). Aliases (the same net under
   several names: ports, ``assign`` copies, Amaranth views) share one Yosys bit, so every physical net
   bit is counted once.
5. ``power_proxy`` (``.proxy``): toggles per class and cycle, weighted by the documented ``W_*``
   constants, plus the clock load of the synthesised FFs, the enabled BRAM reads and the active DSPs, in
   arbitrary "activity units" per cycle (1 unit = one toggle of a LUT output net). Cached under
   ``cache_dir()/power``.
6. ``write_saif`` (``.saif``): a SAIF 2.0 backward file of the same activity, for Vivado's
   ``read_saif`` + ``report_power`` when watts are wanted.

Limits: RTL nets are not post-synthesis nets. Synthesis merges RTL comb nets into LUTs and removes
logic that constants make dead (e.g. the otf scale mux when the scale LUT folds to one k), so the RTL
LUT-class toggles over-count LUT outputs; and nets that exist only inside an ``always`` block (proc's
mux chains in front of flip-flops) are not in the VCD, so they are not counted (``invisible_bits``).
``activity_proxy_synth_scaled`` sidesteps both by scaling each class's mean toggle rate by the
synthesised LUT/FF counts. Zero-delay simulation has no glitches; routing capacitance and fan-out are
not modelled. Use the proxy to rank strategies against each other, never as an absolute power figure.

This package re-exports the names the CLI, ``pezo.boards.flow.comparison_rows`` and the tests use; the rest lives
in its modules (``toggles``, ``nets``, ``proxy``, ``saif``) and in ``pezo.sim.activity``.
"""

import shutil  # noqa: F401 -- tests patch ``power.shutil.which`` (the shared module: it reaches pezo.sim.activity)

from pezo.boards.flow.power.nets import bit_class, classify_nets, netlist
from pezo.boards.flow.power.proxy import CLASSES, NOTE, W_CLK, match_activity, power_proxy
from pezo.boards.flow.power.saif import write_saif
from pezo.boards.flow.power.toggles import toggle_counts
from pezo.sim.activity import CLOCK_PERIOD_NS, IDLE_CYCLES, representative_stimulus, simulate_vcd

__all__ = [
    "CLASSES",
    "CLOCK_PERIOD_NS",
    "IDLE_CYCLES",
    "NOTE",
    "W_CLK",
    "bit_class",
    "classify_nets",
    "match_activity",
    "netlist",
    "power_proxy",
    "representative_stimulus",
    "simulate_vcd",
    "toggle_counts",
    "write_saif",
]
