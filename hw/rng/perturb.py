"""The perturbation stream unit (twin of ``golden.rng.perturb``): one interface over otf, pregen, gaussian.

pregen and gaussian: the source (the pipelined pool reader, or the CLT array) hands a vector to two
registers (``OUTPUT_STAGES``): stage 1 holds R(x, a), the scaling by a constant wiring shift and the
round-half-up adder, stage 2 the sign (a conditional negation). ``en`` alone moves both stages and
consumes the source; ``next`` / ``rewind`` empty them. So every output is a register, and no path holds
more than one adder after the source.

otf: R(x, a) and the sign (``signed_scale_round``: one adder per shift by the scale LUT's k, the negation
folded into it, then a 4-way mux) are combinational behind the URNG registers, so a value is on ``lanes`` in
the cycle the array holds it (output registers would let the array run ahead of the consumer and move where the
next perturbation aligns; see ``golden.rng.perturb``). Its controller starts from registers only (a register mirrors
``pointer == 0``), so the array's clock enables are one LUT from a flip-flop.
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


def signed_scale_round(x, a: int, negate):
    """``-R(x, a)`` if ``negate`` else ``R(x, a)`` (``scale_round``) with one carry chain: the negation folds into
    the add as ``~x`` (= -x - 1, the inversion in front of the adder). a >= 0: ``(~x + 1) << a``; a < 0, s = -a,
    h = 2^(s-1): -floor((x + h) / 2^s) = floor((-x - h + 2^s - 1) / 2^s) = (~x + h) >> s, as 2^s - h = h."""
    x = x.as_signed()
    flipped = Mux(negate, ~x, x)
    if a >= 0:
        return (flipped + negate) << a
    return (flipped + (1 << (-a - 1))) >> -a


def lane_layout(config: PerturbConfig) -> data.ArrayLayout:
    return data.ArrayLayout(signed(STREAM_BITS), stream_lanes(config))


class PerturbationStream(ConfigComponent):
    """Ports: ``en`` (demand: the vector on ``lanes`` is consumed if ``valid``; the pipeline moves), ``next`` "
    "(begin the next perturbation), ``rewind`` (back to the current one's start), ``sign`` (sampled on next/rewind: 1 =
    -epsilon), ``valid``,
    ``lanes`` (``stream_lanes`` signed 16-bit values). Cycle semantics: ``golden.rng.perturb``."""

    class Signature(ConfigSignature):
        def members_for(self, config):
            if config.strategy == "otf":
                check_scalable(config)
            return {
                "en": In(1),
                "next": In(1),
                "rewind": In(1),
                "sign": In(1),
                "valid": Out(1),
                "lanes": Out(lane_layout(config)),
            }

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        negate = Signal()
        command = self.next | self.rewind
        with m.If(command):
            m.d.sync += negate.eq(self.sign)
        source_valid = Signal()
        consume = self.en & source_valid & ~command  # the source's vector leaves it
        restore = self.rewind & ~self.next

        if cfg.strategy == "otf":  # the scale LUT picks a shift per rotation: align to its start
            values, shifts, shift_index = self._otf(m, source_valid, consume, restore)
            for lane, x in zip(self.lanes, values):
                with m.Switch(shift_index):
                    for k, a in enumerate(shifts):
                        with m.Case(k):
                            m.d.comb += lane.eq(signed_scale_round(x, a, negate))
            m.d.comb += self.valid.eq(source_valid)
            return m

        chosen = strategy(cfg.strategy)
        m.submodules.source = source = chosen.stream_source(cfg)
        m.d.comb += [source.restore.eq(restore), getattr(source, chosen.start_input).eq(self.next)]
        if "valid" in source.signature.members:  # a pipelined source (the pool reader) moves on en too
            m.d.comb += [source.en.eq(self.en), source_valid.eq(source.valid)]
        else:  # registers: valid from the first edge on
            m.d.comb += source.en.eq(consume)
            m.d.sync += source_valid.eq(1)
        shift = scale_shift(cfg)
        scaled_valid, valid = Signal(), Signal()  # stage 1 and stage 2 (the port) hold a vector
        with m.If(command):
            m.d.sync += [scaled_valid.eq(0), valid.eq(0)]
        with m.Elif(self.en):
            m.d.sync += [scaled_valid.eq(source_valid), valid.eq(scaled_valid)]
        for lane, x in zip(self.lanes, source.lanes):
            scaled, signed_value = Signal(signed(STREAM_BITS)), Signal(signed(STREAM_BITS))
            with m.If(self.en):
                m.d.sync += [scaled.eq(scale_round(x, shift)), signed_value.eq(Mux(negate, -scaled, scaled))]
            m.d.comb += lane.eq(signed_value)
        m.d.comb += self.valid.eq(valid)
        return m

    def _otf(self, m, source_valid, consume, restore):
        """URNG array with rewind + scale LUT + the aligning controller (see ``golden.rng.perturb``)."""
        cfg = self.config
        m.submodules.urng = urng = strategy(cfg.strategy).stream_source(cfg)
        m.submodules.scale = lut = ScaleLUT(cfg)
        aligning = Signal(init=1)
        # pointer == 0 kept in a register of its own (reset 1; a restore reloads pointer 0; an advance from
        # n - 1 wraps to 0), so the array's clock enables are one LUT from a flip-flop, not from a comparator
        at_rotation_start = Signal(init=1)
        with m.If(urng.restore):
            m.d.sync += at_rotation_start.eq(1)
        with m.Elif(urng.en):
            m.d.sync += at_rotation_start.eq(urng.pointer == cfg.n_rngs - 1)
        command = self.next | self.rewind
        start_now = aligning & at_rotation_start & ~command
        m.d.comb += [
            urng.en.eq(consume | (aligning & ~at_rotation_start & ~command)),
            urng.save.eq(start_now),
            urng.restore.eq(restore),
            lut.state.eq(urng.lanes[0]),
            lut.read.eq(start_now),
        ]
        with m.If(self.next):
            m.d.sync += [aligning.eq(1), source_valid.eq(0)]
        with m.Elif(restore):
            m.d.sync += [aligning.eq(0), source_valid.eq(1)]
        with m.Elif(aligning):
            m.d.sync += [aligning.eq(~start_now), source_valid.eq(start_now)]
        values = [to_twos_complement(lane, cfg.rng_bits) for lane in urng.lanes]
        shifts = [scale_shift(cfg, k) for k in range(SCALE_SHIFTS[0], SCALE_SHIFTS[1] + 1)]
        return values, shifts, lut.shift - SCALE_SHIFTS[0]
