"""The ZO update's step of one lane, shared by the engines: ``round_shift(g * p, 16)`` (round half up;
``golden.engine.int8``) with no stage holding more than one multiplier or one carry chain.

g = g_hi * 2^17 + g_lo (g_lo its 17 low bits, unsigned; g_hi the ``G_HIGH_BITS`` high bits, signed), so
round_shift(g * p, 16) = 2 * g_hi * p + round_shift(g_lo * p, 16) exactly, and each partial product fits one
18 x 18 multiplier. ``update_step`` makes the registers: S3 the two partial products, S4 the low one rounded (the high
one again), S5 their sum, the step. On ECP5 each partial product is a MULT18X18D (``hw.engine.dsp``) whose B input
register is a copy of ``p``'s S2 register and whose A input register holds g one cycle late: the caller keeps g
constant from two cycles before a word's ``p`` reaches S2 until the update has drained.
"""

from __future__ import annotations

from amaranth.hdl import Signal, signed

from pezo.golden.engine.zo_engine import G_BITS, G_FRAC_BITS
from pezo.golden.rng.perturb import STREAM_BITS
from pezo.hw.engine.dsp import dsp_product
from pezo.hw.rng.perturb import scale_round

G_HIGH_BITS = 7
"""The high part of g in the split product: g's 24 bits = 7 signed + 17 unsigned."""
STEP_STAGES = 3
"""Registers from ``p``'s S2 register to the step (S3 products, S4 rounding, S5 step)."""


def update_step(m, g, p1, p2, c: int, ecp5: bool) -> tuple[Signal, list, list]:
    """(the S5 register ``step_<c>`` = round_shift(g * p, 16) of lane ``c``, the S3 products' statements, the S4
    and S5 statements) for the caller's ``m.d.sync`` (it places them among its own lane's statements); ``p1``: ``p``'s
    S1 register (the DSPs' operand on ECP5), ``p2``: its S2 register (the fabric's operand); g: module docstring."""
    low_bits = G_BITS - G_HIGH_BITS
    g_low, g_high = g[:low_bits], g[low_bits:].as_signed()
    low = Signal(signed(low_bits + STREAM_BITS + 1), name=f"g_p_low_{c}")  # S3
    high = Signal(signed(G_HIGH_BITS + STREAM_BITS), name=f"g_p_high_{c}")
    low_rounded = Signal(signed(low_bits + STREAM_BITS + 2 - G_FRAC_BITS), name=f"g_p_round_{c}")  # S4
    high4 = Signal.like(high, name=f"g_p_high_4_{c}")
    step = Signal(signed(G_BITS + STREAM_BITS - G_FRAC_BITS + 1), name=f"step_{c}")  # S5
    if ecp5:  # p_2's and g's registers are each DSP's input registers
        products = [
            low.eq(dsp_product(m, g_low, p1, len(low), f"g_p_low_mult_{c}")),
            high.eq(dsp_product(m, g_high, p1, len(high), f"g_p_high_mult_{c}")),
        ]
    else:
        products = [low.eq(g_low * p2), high.eq(g_high * p2)]
    rounding = [
        low_rounded.eq(scale_round(low, -G_FRAC_BITS)),
        high4.eq(high),
        step.eq((high4 << (low_bits - G_FRAC_BITS)) + low_rounded),
    ]
    return step, products, rounding
