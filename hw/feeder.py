"""The on-chip feeder (twin of ``golden.regs.uart_link.feed_indices``): a master of the ULX3S trainer's internal bus
that copies batches from the data memory into the engine top's free bank through the same x / labels windows
and PUSH the host uses, so TRAIN(S) cycles batches with no host access.

``go`` (one cycle, taken when idle) loads the position from ``start`` and the count from ``batches``; ``stop``
clears the count (a batch being copied is still pushed). While the count is not zero: read STATUS; with
LOAD_READY, per example b of the batch, read its ``BoardMap.x_bytes`` / 8 beats from the data memory (what the
x window takes: the inputs, or a conv layer 0's patches the host im2col'd when it loaded the set) and write them
to the x window, read its label and write it to the labels window, then write CONTROL.PUSH; the position advances by
one per example, wrapping at ``examples``. ``error`` pulses for each access answered ``err``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pezo.golden.regs.engine import CONTROL_BITS, STATUS_BITS, BoardMap
from pezo.golden.regs.uart_link import region_base
from pezo.hw.link_bus import LinkBusSignature

COUNT_BITS = 16


class DataFeeder(wiring.Component):
    """Ports ``bus`` (Out ``LinkBusSignature``), ``examples`` / ``start`` / ``batches`` (In 16), ``go`` / ``stop``
    (In 1), ``busy`` (Out 1: batches remain), ``position`` / ``pushed`` (Out 16), ``error`` (Out 1)."""

    def __init__(self, bmap: BoardMap):
        self.map = bmap
        super().__init__(
            {
                "bus": Out(LinkBusSignature()),
                "examples": In(COUNT_BITS),
                "start": In(COUNT_BITS),
                "batches": In(COUNT_BITS),
                "go": In(1),
                "stop": In(1),
                "busy": Out(1),
                "position": Out(COUNT_BITS),
                "pushed": Out(COUNT_BITS),
                "error": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        bmap, cfg = self.map, self.map.config
        beats = bmap.x_bytes // 8  # a whole number: cols is a power of two >= 8 (check_board_config)
        stride_bits = bmap.x_stride.bit_length() - 1
        regs, windows = region_base("registers"), region_base("windows")
        bus = self.bus
        remaining, go_pending = Signal(COUNT_BITS), Signal()
        p = Signal(COUNT_BITS)  # the example being copied
        b = Signal(range(cfg.array.batch))
        j = Signal(range(max(beats, 2)))
        beat = Signal(64)
        m.d.comb += [self.busy.eq(remaining != 0), self.error.eq(bus.ack & bus.err)]
        with m.If(self.go):
            m.d.sync += go_pending.eq(1)
        x_byte = Cat(Const(0, 3), j)  # the beat's byte offset within the example
        wrapped = Mux(p + 1 >= self.examples, 0, p + 1)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(go_pending):
                    m.d.sync += [
                        go_pending.eq(0),
                        self.position.eq(self.start),
                        remaining.eq(self.batches),
                        self.pushed.eq(0),
                    ]
                with m.Elif((remaining != 0) & ~self.stop):
                    m.next = "STATUS"
            with m.State("STATUS"):
                m.d.comb += [bus.req.eq(1), bus.addr.eq(regs + bmap.register("STATUS"))]
                with m.If(bus.ack):
                    m.next = "IDLE"
                    with m.If(bus.rdata[STATUS_BITS["LOAD_READY"]] & ~bus.err):
                        m.d.sync += [p.eq(self.position), b.eq(0), j.eq(0)]
                        m.next = "X_READ"
            with m.State("X_READ"):
                m.d.comb += [bus.req.eq(1), bus.addr.eq(region_base("data_x") + ((p << stride_bits) | x_byte))]
                with m.If(bus.ack):
                    m.d.sync += beat.eq(bus.rdata)
                    m.next = "X_WRITE"
            with m.State("X_WRITE"):
                m.d.comb += [
                    bus.req.eq(1),
                    bus.we.eq(1),
                    bus.addr.eq(windows + bmap.window("x").base + ((b << stride_bits) | x_byte)),
                    bus.wdata.eq(beat),
                    bus.wstrb.eq(0xFF),
                ]
                with m.If(bus.ack):
                    m.d.sync += j.eq(j + 1)
                    m.next = "X_READ"
                    with m.If(j == beats - 1):
                        m.d.sync += j.eq(0)
                        m.next = "LABEL_READ"
            with m.State("LABEL_READ"):
                m.d.comb += [bus.req.eq(1), bus.addr.eq(region_base("data_labels") + Cat(Const(0, 3), p[3:]))]
                with m.If(bus.ack):
                    m.d.sync += beat.eq(bus.rdata.word_select(p[:3], 8))
                    m.next = "LABEL_WRITE"
            with m.State("LABEL_WRITE"):
                m.d.comb += [
                    bus.req.eq(1),
                    bus.we.eq(1),
                    bus.addr.eq(windows + bmap.window("labels").base + Cat(Const(0, 3), b)),
                    bus.wdata.eq(beat[:8]),
                    bus.wstrb.eq(0xFF),
                ]
                with m.If(bus.ack):
                    m.d.sync += [b.eq(b + 1), p.eq(wrapped)]
                    m.next = "X_READ"
                    with m.If(b == cfg.array.batch - 1):
                        m.next = "PUSH"
            with m.State("PUSH"):
                m.d.comb += [
                    bus.req.eq(1),
                    bus.we.eq(1),
                    bus.addr.eq(regs + bmap.register("CONTROL")),
                    bus.wdata.eq(1 << CONTROL_BITS["PUSH"]),
                    bus.wstrb.eq(0x0F),
                ]
                with m.If(bus.ack):
                    m.d.sync += [
                        self.position.eq(p),
                        remaining.eq(Mux(remaining == 0, 0, remaining - 1)),
                        self.pushed.eq(self.pushed + 1),
                    ]
                    m.next = "IDLE"
        with m.If(self.stop):  # last: wins over the count's update at a PUSH
            m.d.sync += remaining.eq(0)
        return m
