"""The trainer behind a UART (twin of ``golden.regs.uart_link``): ``hw.engine_top.EngineTop`` -- the same register file
and windows the ZCU102's AXI ports reach -- mastered through ``hw.link_bus`` by the UARTBone bridge
(``hw.uart_bridge``) and the on-chip feeder (``hw.feeder``), with the data memory (``capacity`` examples of
inputs and labels) the host loads once.

Ports ``rx`` (In 1) and ``tx`` (Out 1) are the UART lines, ``leds`` (Out 8) the engine's BUSY, DONE, LOAD_READY,
ERROR, IRQ, STEPS_DONE[1:0] and the feeder's BUSY.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.engine.network import NetConfig
from pezo.golden.regs.engine import BoardMap
from pezo.golden.regs.uart_link import FEED_CONTROL_BITS, FEED_STATUS_BITS, feeder_registers
from pezo.hw.axil import AXI4LiteRegisters
from pezo.hw.engine_top import ID_BITS, EngineTop
from pezo.hw.feeder import COUNT_BITS, DataFeeder
from pezo.hw.link_bus import LinkArbiter, LinkInterconnect
from pezo.hw.uart import check_divisor
from pezo.hw.uart_bridge import UARTBridge


def check_capacity(capacity: int, config: NetConfig) -> int:
    """The data memory's examples: a power of two, at least the batch and 8, at most 2^15."""
    low, high = max(config.array.batch, 8), 1 << (COUNT_BITS - 1)
    if not isinstance(capacity, int) or not low <= capacity <= high or capacity & (capacity - 1):
        raise ValueError(f"capacity must be a power of two in {low}..{high} examples, got {capacity!r}")
    return capacity


class UartEngineTop(wiring.Component):
    """The engine top of ``config`` behind a UART of ``divisor`` clock cycles per bit, with a data memory of
    ``capacity`` examples (module docstring)."""

    def __init__(self, config: NetConfig, divisor: int, capacity: int):
        self.map = BoardMap(config)
        self.config = config
        self.divisor = check_divisor(divisor)
        self.capacity = check_capacity(capacity, config)
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "leds": Out(8)})

    @property
    def x_words(self) -> int:
        """64-bit words of the data memory's inputs."""
        return self.capacity * self.map.x_stride // 8

    def elaborate(self, platform):
        m = Module()
        bmap = self.map
        m.submodules.engine = engine = EngineTop(self.config)
        m.submodules.bridge = bridge = UARTBridge(self.divisor)
        m.submodules.feeder = feeder = DataFeeder(bmap)
        m.submodules.arbiter = arbiter = LinkArbiter()
        mem_bits = max(self.x_words, 2).bit_length() - 1
        m.submodules.interconnect = ic = LinkInterconnect(bmap.addr_width, mem_bits, ID_BITS)
        m.submodules.feed_regs = regs = AXI4LiteRegisters(feeder_registers())
        wiring.connect(m, bridge.bus, arbiter.m0)
        wiring.connect(m, feeder.bus, arbiter.m1)
        wiring.connect(m, arbiter.bus, ic.bus)
        wiring.connect(m, ic.regs, engine.s_axil)
        wiring.connect(m, ic.windows, engine.s_axi)
        wiring.connect(m, ic.feeder, regs.s_axil)
        m.d.comb += [bridge.rx.eq(self.rx), self.tx.eq(bridge.tx)]

        # the data memory: inputs (example e at e * x_stride bytes) and labels (byte e), 64-bit words
        m.submodules.data_x = data_x = Memory(shape=64, depth=self.x_words, init=[])
        m.submodules.data_labels = data_labels = Memory(shape=64, depth=max(self.capacity // 8, 2), init=[])
        rdata = []
        for memory, sel in ((data_x, 0), (data_labels, 1)):
            w, r = memory.write_port(granularity=8), memory.read_port(transparent_for=())
            m.d.comb += [w.addr.eq(ic.mem_addr), r.addr.eq(ic.mem_addr), w.data.eq(ic.mem_wdata)]
            m.d.comb += w.en.eq(Mux(ic.mem_sel == sel, ic.mem_we, 0))
            rdata.append(r.data)
        m.d.comb += ic.mem_rdata.eq(Mux(ic.mem_sel, rdata[1], rdata[0]))

        # the feeder's registers
        control = regs.FEED_CONTROL
        errors = Signal(COUNT_BITS)
        with m.If(control[FEED_CONTROL_BITS["CLEAR_ERRORS"]]):
            m.d.sync += errors.eq(0)
        with m.Elif((bridge.error | feeder.error) & (errors != (1 << COUNT_BITS) - 1)):
            m.d.sync += errors.eq(errors + 1)
        status = Signal(2)
        m.d.comb += [
            status[FEED_STATUS_BITS["BUSY"]].eq(feeder.busy),
            status[FEED_STATUS_BITS["LINK_ERROR"]].eq(errors != 0),
            feeder.examples.eq(regs.FEED_EXAMPLES),
            feeder.start.eq(regs.FEED_START),
            feeder.batches.eq(regs.FEED_BATCHES),
            feeder.go.eq(control[FEED_CONTROL_BITS["GO"]]),
            feeder.stop.eq(control[FEED_CONTROL_BITS["STOP"]]),
            regs.FEED_CAPACITY.eq(self.capacity),
            regs.FEED_STATUS.eq(status),
            regs.FEED_POSITION.eq(feeder.position),
            regs.FEED_PUSHED.eq(feeder.pushed),
            regs.LINK_ERRORS.eq(errors),
            self.leds.eq(Cat(engine.leds[:7], feeder.busy)),
        ]
        return m
