"""The perturbation stream unit (twin of ``golden.rng.perturb``): one interface over otf, pregen, gaussian.

The source (URNG array + scale LUT, banked pool, or CLT array) keeps its outputs in registers or BRAM
output registers; scaling by 2^a with round-half-up, and the sign, are combinational behind them, so a
value is on ``lanes`` in the cycle its source holds it. For otf the shift varies with the LUT's k (a
4-way mux of constant shifts per lane); for pregen and gaussian it is a constant wiring shift.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.perturb import STREAM_BITS, scale_shift, stream_lanes
from pezo.golden.rng.scale import SCALE_SHIFTS, check_scalable
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.rng.scale import ScaleLUT
from pezo.hw.rng.urng import to_twos_complement
from pezo.hw.strategies import strategy


def scale_round(x, a: int):
    """R(x, a) of ``golden.rng.perturb``: x << a, or (x + 2^(-a-1)) >> -a (arithmetic, round half up)."""
    if a >= 0:
        return x.as_signed() << a
    return (x.as_signed() + (1 << (-a - 1))) >> -a


def lane_layout(config: PerturbConfig) -> data.ArrayLayout:
    return data.ArrayLayout(signed(STREAM_BITS), stream_lanes(config))


class PerturbationStream(ConfigComponent):
    """Ports: ``en`` (consume the vector on ``lanes``), ``next`` (begin the next perturbation), ``rewind``
    (back to the current one's start), ``sign`` (sampled on next/rewind: 1 = -epsilon), ``valid``,
    ``lanes`` (``stream_lanes`` signed 16-bit values). Cycle semantics: ``golden.rng.perturb``."""

    class Signature(ConfigSignature):
        def members_for(self, config):
            if config.strategy == "otf":
                check_scalable(config)
            return {"en": In(1), "next": In(1), "rewind": In(1), "sign": In(1),
                    "valid": Out(1), "lanes": Out(lane_layout(config))}

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        valid = Signal()
        negate = Signal()
        with m.If(self.next | self.rewind):
            m.d.sync += negate.eq(self.sign)
        consume = self.en & valid & ~self.next & ~self.rewind
        restore = self.rewind & ~self.next

        if cfg.strategy == "otf":  # the scale LUT picks a shift per rotation: align to its start
            values, shifts, shift_index = self._otf(m, valid, consume, restore)
        else:  # a constant shift: the source's values are valid from the first cycle
            chosen = strategy(cfg.strategy)
            m.submodules.source = source = chosen.stream_source(cfg)
            m.d.comb += [source.en.eq(consume), source.restore.eq(restore),
                         getattr(source, chosen.start_input).eq(self.next)]
            m.d.sync += valid.eq(1)
            values, shifts, shift_index = list(source.lanes), [scale_shift(cfg)], 0

        for lane, x in zip(self.lanes, values):
            scaled = Signal(signed(STREAM_BITS))
            if len(shifts) == 1:
                m.d.comb += scaled.eq(scale_round(x, shifts[0]))
            else:
                with m.Switch(shift_index):
                    for k, a in enumerate(shifts):
                        with m.Case(k):
                            m.d.comb += scaled.eq(scale_round(x, a))
            m.d.comb += lane.eq(Mux(negate, -scaled, scaled))
        m.d.comb += self.valid.eq(valid)
        return m

    def _otf(self, m, valid, consume, restore):
        """URNG array with rewind + scale LUT + the aligning controller (see ``golden.rng.perturb``)."""
        cfg = self.config
        m.submodules.urng = urng = strategy(cfg.strategy).stream_source(cfg)
        m.submodules.scale = lut = ScaleLUT(cfg)
        aligning = Signal(init=1)
        at_rotation_start = urng.pointer == 0
        command = self.next | self.rewind
        start_now = aligning & at_rotation_start & ~command
        m.d.comb += [
            urng.en.eq(consume | (aligning & ~at_rotation_start & ~command)),
            urng.save.eq(start_now), urng.restore.eq(restore),
            lut.state.eq(urng.lanes[0]), lut.read.eq(start_now),
        ]
        with m.If(self.next):
            m.d.sync += [aligning.eq(1), valid.eq(0)]
        with m.Elif(restore):
            m.d.sync += [aligning.eq(0), valid.eq(1)]
        with m.Elif(aligning):
            m.d.sync += [aligning.eq(~start_now), valid.eq(start_now)]
        values = [to_twos_complement(lane, cfg.rng_bits) for lane in urng.lanes]
        shifts = [scale_shift(cfg, k) for k in range(SCALE_SHIFTS[0], SCALE_SHIFTS[1] + 1)]
        return values, shifts, lut.shift - SCALE_SHIFTS[0]
