"""``sim.netlist.drop_unread_wires``: only assignments to wires nothing reads go, ports and everything read stay.
(That the simulated designs still equal golden is every RTL test's job: they all run this netlist.)"""

import re

from pezo.golden.config import PerturbConfig
from pezo.hw.rng.perturb import PerturbationStream
from pezo.sim.netlist import drop_unread_wires

VERILOG = """\
module top(a, y, z, clk);
  input [3:0] a;
  wire [3:0] a;
  input clk;
  wire clk;
  output [3:0] y;
  wire [3:0] y;
  output z;
  reg z = 1'h0;
  wire [3:0] alias;
  wire [1:0] \\alias[0] ;
  (* keep_me_with_the_wire *)
  wire [3:0] used;
  wire [3:0] in_always;
  wire [3:0] spans;
  assign alias = { a[0], a[1], a[2], a[3] };
  assign \\alias[0]  = alias[1:0];
  assign used = a + 4'h1;
  assign in_always = ~ a;
  assign y = used;
  assign spans = a ^
    used;
  always @(posedge clk)
    z <= in_always[0];
endmodule
"""


def test_unread_aliases_go_to_a_fixpoint_and_what_is_read_stays():
    pruned = drop_unread_wires(VERILOG)
    # the alias chain: alias[0] is read by nothing, and once it is gone alias is read by nothing
    assert "alias" not in pruned
    for kept in ("assign used = a + 4'h1;", "assign in_always = ~ a;", "assign y = used;", "output z;"):
        assert kept in pruned
    assert "(* keep_me_with_the_wire *)\n  wire [3:0] used;" in pruned  # another wire's attributes stay
    assert "assign spans = a ^\n    used;" in pruned  # a statement over two lines is never cut
    assert drop_unread_wires(pruned) == pruned


def test_an_unread_wire_takes_its_attribute_lines_along():
    text = VERILOG.replace("  wire [3:0] alias;\n", "  (* init = 4'h0 *)\n  wire [3:0] alias;\n")
    pruned = drop_unread_wires(text)
    assert "init" not in pruned and "alias" not in pruned


def test_the_stream_loses_its_debug_aliases_and_keeps_its_ports():
    """The 32-lane stream: Amaranth's ``lanes[i]`` field names and the URNG's flattened ``lanes`` port were the
    wide aliases that cost Icarus most of its time; every port and register is still there."""
    from amaranth.back import verilog

    config = PerturbConfig(n_rngs=32, rng_bits=14, lfsr_bit_order="spread", perturb_dim=7, eps_shift=11)
    text = verilog.convert(PerturbationStream(config), name="pezo_stream", emit_src=False)
    pruned = drop_unread_wires(text)

    def declared(source, kind):
        return set(re.findall(rf"^\s*{kind}\b[^;]*?(\S+) ;?$", source, re.M))

    assert pruned.count("\n") < text.count("\n")
    assert not re.search(r"assign \\lanes\[\d+\] ", pruned) and re.search(r"assign \\lanes\[\d+\] ", text)
    for kind in ("input", "output", "reg"):
        assert declared(pruned, kind) == declared(text, kind)
    assert pruned.count("always @") == text.count("always @")
