"""The fabric's limit for each primitive our designs end on, measured with the same flow as every design's
Fmax (``boards.flow.timing.fmax``: Yosys synth_ecp5, nextpnr-ecp5 on the LFE5UM-85F-6, median of
``boards.flow.timing.SEEDS``, every input from a register and every output into one):

* ``ff -> LUT4 -> ff``: one 4-input function between two flip-flops (the shortest logic path);
* ``ff -> carry 16 -> ff``: a 16-bit adder (a CCU2C chain, what counters and address adders become);
* ``ff -> EBR -> ff``: a 512 x 36 block RAM read, output register off (Yosys packs none);
* ``ff -> EBR (output register) -> ff``: a 1024 x 36 read through ``hw.engine.ebr`` (two DP16KD with
  ``REGMODE_B`` OUTREG: what the network engine's weight memory is on ECP5), two cycles;
* ``ff -> MULT18X18D -> ff``: an 18 x 18 signed multiply, DSP registers off (Yosys packs none).

So a design's Fmax can be set against the primitive its critical path runs through: how close it gets.

    .venv/bin/python benchmarks/bench_primitive_limits.py [--out benchmarks/results/timing/primitive_limits]

Writes NAME.json and NAME.md. Cached like every timing run.
"""

import argparse
import json
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.boards.flow import timing
from pezo.hw.engine.ebr import ebr_memory


def _clock_port(m):
    """A clock (and reset) port for the register wrapper; the flip-flop itself is optimised away."""
    m.d.sync += Signal(name="clock_port").eq(0)


class Lut4(wiring.Component):
    a: In(4)
    o: Out(1)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.o.eq((self.a[0] & self.a[1]) ^ (self.a[2] | self.a[3]))
        _clock_port(m)
        return m


class Add16(wiring.Component):
    a: In(16)
    b: In(16)
    o: Out(16)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.o.eq(self.a + self.b)
        _clock_port(m)
        return m


def _connect(m, ports, read, write):
    """A memory's read and write port to the component's ``raddr`` / ``rdata`` / ``waddr`` / ``wdata`` / ``we``."""
    m.d.comb += [
        read.addr.eq(ports.raddr),
        ports.rdata.eq(read.data),
        write.addr.eq(ports.waddr),
        write.data.eq(ports.wdata),
        write.en.eq(ports.we),
    ]
    return m


class EbrRead(wiring.Component):
    """512 x 36 memory: one synchronous read port, one write port; the data goes straight to the output."""

    raddr: In(9)
    waddr: In(9)
    wdata: In(36)
    we: In(1)
    rdata: Out(36)

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = Memory(shape=unsigned(36), depth=512, init=[])
        return _connect(m, self, mem.read_port(), mem.write_port())


class EbrOutputRegister(wiring.Component):
    """1024 x 36 memory of ``hw.engine.ebr``: the read data through the blocks' output registers."""

    raddr: In(10)
    waddr: In(10)
    wdata: In(36)
    we: In(1)
    rdata: Out(36)

    def elaborate(self, platform):
        m = Module()
        return _connect(m, self, *ebr_memory(m, "mem", unsigned(36), 1024))


class Mult18(wiring.Component):
    a: In(signed(18))
    b: In(signed(18))
    o: Out(signed(36))

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.o.eq(self.a * self.b)
        _clock_port(m)
        return m


PRIMITIVES = {
    "ff -> LUT4 -> ff": Lut4,
    "ff -> carry 16 -> ff": Add16,
    "ff -> EBR (no output register) -> ff": EbrRead,
    "ff -> EBR (output register) -> ff": EbrOutputRegister,
    "ff -> MULT18X18D (no registers) -> ff": Mult18,
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/timing/primitive_limits"))
    args = parser.parse_args(argv)
    rows = []
    for name, component in PRIMITIVES.items():
        top = "prim_" + component.__name__.lower()
        text = verilog.convert(component(), name=top, emit_src=False)
        t = timing.fmax(text, top)
        rows.append(
            {
                "primitive": name,
                "fmax_mhz": t["fmax_mhz"],
                "fmax_per_seed": t["fmax_per_seed"],
                "fmax_source": t["fmax_source"],
                "target": t["target"],
                "critical_path": t["critical_path"],
            }
        )
        print(f"{name:42s} {t['fmax_mhz']:7.1f} MHz", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        f"Primitive limits on {rows[0]['target']} (nextpnr-ecp5, median of seeds "
        f"{', '.join(rows[0]['fmax_per_seed'])}; `.venv/bin/python benchmarks/bench_primitive_limits.py`)",
        "",
        "| path | Fmax MHz | per seed |",
        "|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['primitive']} | {r['fmax_mhz']:.1f} | "
            + " / ".join(f"{v:.0f}" for v in r["fmax_per_seed"].values())
            + " |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
