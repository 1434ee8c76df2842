"""The scale LUT of the on-the-fly strategy (twin of ``golden.rng.scale``): 2^b two-bit shifts in a ROM.

One synchronous read port with a read enable: ``shift`` is the entry at the ``state`` presented on the
last edge with ``read`` high, and holds until the next read (the BRAM output register is the
perturbation's shift register). Where it lives: a RAMB18/36 for b >= ``BLOCK_ROM_MIN_BITS`` (2^10 x 2
bits would already take 32 LUT6 plus muxes as LUT-ROM, one RAMB18 holds up to 2^14 x 1), LUT-ROM below
(a 256 x 2 table is 8 LUTs; a whole RAMB18 for it would waste 18 kbit). A LUT whose entries are all
equal (every large d: the factor's spread is smaller than the power-of-two rounding step) is folded
to a constant by synthesis, which is correct and free.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.scale import SCALE_SHIFTS, check_scalable, scale_lut
from pezo.hw.component import ConfigComponent, ConfigSignature

BLOCK_ROM_MIN_BITS = 10
SHIFT_BITS = SCALE_SHIFTS[1].bit_length()


def rom_style(config: PerturbConfig) -> str:
    """``block`` (RAMB18/36) or ``logic`` (a LUT-ROM in fabric: Yosys maps ``distributed`` to LUTRAM,
    which needs a write port, while ``logic`` builds the table from LUTs, as Vivado's distributed ROM)."""
    return "block" if config.rng_bits >= BLOCK_ROM_MIN_BITS else "logic"


class ScaleLUT(ConfigComponent):
    """Ports: ``state`` (b-bit LFSR state, lane 0 at a perturbation start), ``read``, ``shift`` (k)."""

    class Signature(ConfigSignature):
        def members_for(self, config):
            check_scalable(config)
            return {"state": In(config.rng_bits), "read": In(1), "shift": Out(SHIFT_BITS)}

    def __init__(self, config: PerturbConfig, lut=None):
        self._lut = scale_lut(config) if lut is None else lut
        super().__init__(config)

    def elaborate(self, platform):
        m = Module()
        m.submodules.rom = rom = Memory(
            shape=SHIFT_BITS,
            depth=len(self._lut),
            init=[int(k) for k in self._lut],
            attrs={"rom_style": rom_style(self.config)},
        )
        port = rom.read_port(domain="sync", transparent_for=())
        m.d.comb += [port.addr.eq(self.state), port.en.eq(self.read), self.shift.eq(port.data)]
        return m
