"""The CLT Gaussian RNG array (twin of ``golden.rng.grng``): per generator a 127-bit LFSR leaping 96
steps per clock (96 two-input XORs) and an adder tree over 12 bytes.

The output is combinational from the state registers through a balanced tree of 11 adders (widths
9, 10, 11, 12 bits), so one generator is 127 FFs (254 with rewind), 96 XOR LUTs and the tree.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from pezo.golden.rng.grng import GRNG_BITS, GRNG_LFSR_BITS, LEAP, OFFSET, UNIFORMS, grng_seeds
from pezo.hw.component import ConfigComponent, ConfigSignature


def leap(state):
    """The state 96 steps later: s[126..96] shifted down, new bits s[j] ^ s[j+1] on top."""
    new = Cat(*(state[j] ^ state[j + 1] for j in range(LEAP)))
    return Cat(state[LEAP:], new)


def clt_sample(state):
    """sum of the 12 low bytes - 1530, as a signed value (balanced adder tree)."""
    terms = [state[8 * i : 8 * i + 8] for i in range(UNIFORMS)]
    while len(terms) > 1:
        pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return (terms[0] - OFFSET).as_signed()


class GaussianArray(ConfigComponent):
    """``config.lanes`` generators. Ports: ``en`` (leap), ``save`` / ``restore`` (with ``config.rewind``),
    ``lanes`` (signed 12-bit z per generator, z / 256 ~ N(0, 1)). Semantics: ``golden.rng.grng``."""

    class Signature(ConfigSignature):
        def members_for(self, config):
            members = {"en": In(1), "lanes": Out(data.ArrayLayout(signed(GRNG_BITS), config.lanes))}
            if config.rewind:
                members.update(save=In(1), restore=In(1))
            return members

    def elaborate(self, platform):
        m = Module()
        for g, seed in enumerate(grng_seeds(self.config)):
            state = Signal(GRNG_LFSR_BITS, name=f"grng{g}", init=seed)
            if self.config.rewind:
                shadow = Signal(GRNG_LFSR_BITS, name=f"shadow{g}", init=seed)
                with m.If(self.save):
                    m.d.sync += shadow.eq(state)
                with m.If(self.restore):
                    m.d.sync += state.eq(shadow)
                with m.Elif(self.en):
                    m.d.sync += state.eq(leap(state))
            else:
                with m.If(self.en):
                    m.d.sync += state.eq(leap(state))
            m.d.comb += self.lanes[g].eq(clt_sample(state))
        return m
