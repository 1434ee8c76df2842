"""The ULX3S trainer's internal bus (``LinkBusSignature``) and its two ends: ``LinkArbiter`` (two masters, the
UART bridge and the feeder, take turns per access) and ``LinkInterconnect`` (one access at a time to the
regions of ``golden.regs.uart_link``: AXI4-Lite masters on the engine top's and the feeder's register files, an
AXI4 single-beat master on the engine top's windows, the data memories directly).

Protocol: a master raises ``req`` with ``addr`` (byte address), ``we``, ``wdata`` / ``wstrb`` (64-bit, byte lane i
= address bit 0..2 = i) and holds them until ``ack`` (one cycle), which carries ``rdata`` and ``err`` (the slave
answered SLVERR, or no region). 32-bit regions take the lane half ``addr`` bit 2 selects and answer their word
in both halves.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pezo.golden.regs.spec import RESP_OKAY
from pezo.golden.regs.uart_link import REGION_SHIFT, REGIONS
from pezo.hw.axi4 import BURST_INCR, AXI4Signature
from pezo.hw.axil import AXI4LiteSignature


class LinkBusSignature(wiring.Signature):
    """The bus as its master sees it."""

    def __init__(self):
        super().__init__(
            {
                "req": Out(1),
                "we": Out(1),
                "addr": Out(32),
                "wdata": Out(64),
                "wstrb": Out(8),
                "ack": In(1),
                "rdata": In(64),
                "err": In(1),
            }
        )


class LinkArbiter(wiring.Component):
    """``m0`` and ``m1`` (In: masters) share ``bus`` (Out); a master is granted in the cycle it asks (the bus
    idle) and keeps the bus until its ``ack``; then the other one goes first if it waits (round robin)."""

    def __init__(self):
        super().__init__({"m0": In(LinkBusSignature()), "m1": In(LinkBusSignature()), "bus": Out(LinkBusSignature())})

    def elaborate(self, platform):
        m = Module()
        active, owner = Signal(), Signal()
        masters = (self.m0, self.m1)
        # an idle bus is granted in the cycle a master asks (no cycle lost per access); m1 waits if m0 asks too,
        # unless m0 had the last turn
        choose = ~(self.m0.req & (~self.m1.req | owner))
        sel = Mux(active, owner, choose)
        for field in ("we", "addr", "wdata", "wstrb"):
            m.d.comb += getattr(self.bus, field).eq(Mux(sel, getattr(masters[1], field), getattr(masters[0], field)))
        m.d.comb += self.bus.req.eq(active | self.m0.req | self.m1.req)
        for i, master in enumerate(masters):
            m.d.comb += [
                master.ack.eq(self.bus.ack & (owner == i)),
                master.rdata.eq(self.bus.rdata),
                master.err.eq(self.bus.err),
            ]
        with m.If(active):
            with m.If(self.bus.ack):
                m.d.sync += active.eq(0)
        with m.Elif(self.m0.req | self.m1.req):
            m.d.sync += [active.eq(1), owner.eq(choose)]
        return m


class LinkInterconnect(wiring.Component):
    """``bus`` (In) to ``regs`` (AXI4-Lite, region 0), ``windows`` (AXI4, region 1, ``window_bits`` address
    bits), ``feeder`` (AXI4-Lite, region 2), and the data memories' ports ``mem_*`` (regions 3 and 4:
    ``mem_sel`` 0 inputs / 1 labels, ``mem_addr`` the 64-bit word, ``mem_we`` byte enables, ``mem_wdata``,
    ``mem_rdata`` one cycle after the address)."""

    def __init__(self, window_bits: int, mem_addr_bits: int, id_bits: int = 16):
        self.window_bits = window_bits
        super().__init__(
            {
                "bus": In(LinkBusSignature()),
                "regs": Out(AXI4LiteSignature(12)),
                "feeder": Out(AXI4LiteSignature(12)),
                "windows": Out(AXI4Signature(window_bits, id_bits)),
                "mem_sel": Out(1),
                "mem_addr": Out(mem_addr_bits),
                "mem_we": Out(8),
                "mem_wdata": Out(64),
                "mem_rdata": In(64),
            }
        )

    def elaborate(self, platform):
        m = Module()
        bus, win = self.bus, self.windows
        region = bus.addr[REGION_SHIFT:]
        half = bus.addr[2]
        word32 = Mux(half, bus.wdata[32:], bus.wdata[:32])
        strb32 = Mux(half, bus.wstrb[4:], bus.wstrb[:4])
        in_window = bus.addr[self.window_bits : REGION_SHIFT] == 0
        m.d.comb += [
            self.mem_sel.eq(region == REGIONS["data_labels"]),
            self.mem_addr.eq(bus.addr[3:]),
            self.mem_wdata.eq(bus.wdata),
        ]
        for lite in (self.regs, self.feeder):
            m.d.comb += [
                lite.awaddr.eq(bus.addr[:12]),
                lite.araddr.eq(bus.addr[:12]),
                lite.wdata.eq(word32),
                lite.wstrb.eq(strb32),
                lite.bready.eq(1),
                lite.rready.eq(1),
            ]
        m.d.comb += [
            win.awaddr.eq(bus.addr[: self.window_bits]),
            win.araddr.eq(bus.addr[: self.window_bits]),
            win.awlen.eq(0),
            win.arlen.eq(0),
            win.awsize.eq(3),
            win.arsize.eq(3),
            win.awburst.eq(BURST_INCR),
            win.arburst.eq(BURST_INCR),
            win.wdata.eq(bus.wdata),
            win.wstrb.eq(bus.wstrb),
            win.wlast.eq(1),
            win.bready.eq(1),
            win.rready.eq(1),
        ]
        aw_done, w_done = Signal(), Signal()

        def answer(data, err):
            m.d.sync += [bus.ack.eq(1), bus.rdata.eq(data), bus.err.eq(err)]
            m.next = "IDLE"

        m.d.sync += bus.ack.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                m.d.sync += [aw_done.eq(0), w_done.eq(0)]
                with m.If(bus.req & ~bus.ack):
                    with m.Switch(region):
                        with m.Case(REGIONS["registers"]):
                            m.next = "LITE_REGS"
                        with m.Case(REGIONS["feeder"]):
                            m.next = "LITE_FEEDER"
                        with m.Case(REGIONS["windows"]):
                            m.next = "WINDOW"
                        with m.Case(REGIONS["data_x"], REGIONS["data_labels"]):
                            m.next = "MEM"
                        with m.Default():
                            m.d.sync += [bus.ack.eq(1), bus.rdata.eq(0), bus.err.eq(1)]
            for name, lite in (("LITE_REGS", self.regs), ("LITE_FEEDER", self.feeder)):
                with m.State(name):
                    with m.If(bus.we):
                        m.d.comb += [lite.awvalid.eq(~aw_done), lite.wvalid.eq(~w_done)]
                        with m.If(lite.awready):
                            m.d.sync += aw_done.eq(1)
                        with m.If(lite.wready):
                            m.d.sync += w_done.eq(1)
                        with m.If(lite.bvalid):
                            answer(0, lite.bresp != RESP_OKAY)
                    with m.Else():
                        m.d.comb += lite.arvalid.eq(~aw_done)
                        with m.If(lite.arready):
                            m.d.sync += aw_done.eq(1)
                        with m.If(lite.rvalid):
                            answer(lite.rdata.replicate(2), lite.rresp != RESP_OKAY)
            with m.State("WINDOW"):
                with m.If(~in_window):
                    answer(0, 1)
                with m.Elif(bus.we):
                    m.d.comb += [win.awvalid.eq(~aw_done), win.wvalid.eq(aw_done & ~w_done)]
                    with m.If(win.awready):
                        m.d.sync += aw_done.eq(1)
                    with m.If(win.wready & aw_done):
                        m.d.sync += w_done.eq(1)
                    with m.If(win.bvalid):
                        answer(0, win.bresp != RESP_OKAY)
                with m.Else():
                    m.d.comb += win.arvalid.eq(~aw_done)
                    with m.If(win.arready):
                        m.d.sync += aw_done.eq(1)
                    with m.If(win.rvalid):
                        answer(win.rdata, win.rresp != RESP_OKAY)
            with m.State("MEM"):
                m.d.comb += self.mem_we.eq(Mux(bus.we, bus.wstrb, 0))
                m.next = "MEM_READ"
            with m.State("MEM_READ"):
                answer(self.mem_rdata, 0)
        return m
