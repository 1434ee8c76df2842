"""The stream host: the perturbation stream behind the AXI4-Lite register file (``golden.regs.stream``).

Port ``s_axil`` only (plus ``leds``, 8 status bits for a board: bit 0 BUSY, 1 VALID, 2 DONE, 3 SIGN,
4..7 STEP[3:0]). The run datapath sums each consumed vector's lanes with an adder tree into a
32-bit accumulator (wrapping) and captures the vector into the RESULT registers.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pezo.golden.regs.stream import (
    CONTROL_NEXT,
    CONTROL_REWIND,
    CONTROL_RUN,
    CONTROL_SIGN,
    HOST_ID,
    HOST_VERSION,
    STATUS_BUSY,
    STATUS_DONE,
    STATUS_SIGN,
    STATUS_VALID,
    STRATEGY_IDS,
    addr_width,
    register_map,
)
from pezo.golden.rng.perturb import stream_lanes
from pezo.hw.axil import AXI4LiteRegisters, AXI4LiteSignature
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.engine.pe_array import tree_sum
from pezo.hw.rng.perturb import PerturbationStream


def _bit(mask: int) -> int:
    """The bit index of a one-bit register mask of ``golden.regs.stream``."""
    return mask.bit_length() - 1


class StreamHost(ConfigComponent):
    """AXI4-Lite slave ``s_axil`` over ``hw.rng.perturb.PerturbationStream(config)``; map and semantics in
    ``golden.regs.stream``."""

    class Signature(ConfigSignature):
        def members_for(self, config):
            return {"s_axil": In(AXI4LiteSignature(addr_width(config))), "leds": Out(8)}

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        lanes = stream_lanes(cfg)
        m.submodules.regs = regs = AXI4LiteRegisters(register_map(cfg), addr_width(cfg))
        m.submodules.stream = stream = PerturbationStream(cfg)
        wiring.connect(m, wiring.flipped(self.s_axil), regs.s_axil)

        busy, done, remaining = Signal(), Signal(), Signal(32)
        step, cycles, total = Signal(32), Signal(32), Signal(signed(32))
        control = regs.CONTROL
        next_, rewind, run, sign_bit = (
            control[_bit(mask)] for mask in (CONTROL_NEXT, CONTROL_REWIND, CONTROL_RUN, CONTROL_SIGN)
        )
        m.d.comb += [stream.next.eq(next_), stream.rewind.eq(rewind), stream.sign.eq(sign_bit), stream.en.eq(busy)]
        consumed = busy & stream.valid & ~next_ & ~rewind
        vector_sum = Signal(signed(32))
        m.d.comb += vector_sum.eq(tree_sum(stream.lanes))

        with m.If(next_ | rewind):
            m.d.sync += [total.eq(0), done.eq(0), busy.eq(0)]
        with m.If(next_):
            m.d.sync += step.eq(step + 1)
        with m.If(busy):
            m.d.sync += cycles.eq(cycles + 1)
        with m.If(consumed):
            m.d.sync += [total.eq(total + vector_sum), remaining.eq(remaining - 1)]
            with m.If(remaining == 1):
                m.d.sync += [busy.eq(0), done.eq(1)]
            for i, lane in enumerate(stream.lanes):
                m.d.sync += getattr(regs, f"RESULT_{i}").eq(lane)
        with m.If(run):  # after the command's NEXT/REWIND (same edge, later statement wins)
            m.d.sync += [cycles.eq(0), remaining.eq(regs.COUNT), busy.eq(regs.COUNT != 0), done.eq(regs.COUNT == 0)]

        sign = Signal()
        with m.If(next_ | rewind):
            m.d.sync += sign.eq(sign_bit)
        m.d.comb += [
            regs.ID.eq(HOST_ID),
            regs.VERSION.eq(HOST_VERSION),
            regs.STRATEGY.eq(STRATEGY_IDS[cfg.strategy]),
            regs.LANES.eq(lanes),
            regs.STATUS.eq(
                (busy << _bit(STATUS_BUSY))
                | (stream.valid << _bit(STATUS_VALID))
                | (sign << _bit(STATUS_SIGN))
                | (done << _bit(STATUS_DONE))
            ),
            regs.STEP.eq(step),
            regs.CYCLES.eq(cycles),
            regs.SUM.eq(total),
            self.leds.eq(busy | (stream.valid << 1) | (done << 2) | (sign << 3) | (step[:4] << 4)),
        ]
        return m
