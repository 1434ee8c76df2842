"""The UARTBone bridge (twin of ``golden.regs.uart_link``'s framing): UART frames in, accesses on a
``hw.link_bus.LinkBusSignature`` bus out, read answers back on the UART.

One frame at a time: a write frame's words become bus writes as they arrive (a low half followed in the same
frame by its high half is held and written with it as one 64-bit beat, in the 64-bit regions), a read frame's
words are read one by one and each sent (4 bytes, big endian) before the next is read. A received byte waits in
a one-byte buffer while the bus is busy (an access must end within a byte time, ten bit times). ``error``
pulses for each access the bus answered with ``err``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pezo.golden.regs.uart_link import (
    CMD_READ_FIXED,
    CMD_WRITE,
    CMD_WRITE_FIXED,
    REGION_SHIFT,
    REGIONS,
    RX_TIMEOUT_BITS,
)
from pezo.hw.link_bus import LinkBusSignature
from pezo.hw.uart import UARTReceiver, UARTTransmitter

WIDE_REGIONS = (REGIONS["windows"], REGIONS["data_x"], REGIONS["data_labels"])
"""Regions with 64-bit words (the others are 32-bit register files)."""


class UARTBridge(wiring.Component):
    """Ports ``rx`` (In 1), ``tx`` (Out 1), ``bus`` (Out ``LinkBusSignature``), ``error`` (Out 1); ``divisor``
    clock cycles per bit."""

    def __init__(self, divisor: int):
        self.divisor = divisor
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "bus": Out(LinkBusSignature()), "error": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.receiver = rx = UARTReceiver(self.divisor)
        m.submodules.transmitter = tx = UARTTransmitter(self.divisor)
        m.d.comb += [rx.rx.eq(self.rx), self.tx.eq(tx.tx)]
        byte, pending, take = Signal(8), Signal(), Signal()
        with m.If(rx.valid):
            m.d.sync += [byte.eq(rx.data), pending.eq(1)]
        with m.Elif(take):
            m.d.sync += pending.eq(0)
        got = pending  # a byte is there; ``take`` consumes it
        cmd, count = Signal(8), Signal(8)
        addr = Signal(32)
        word, held, has_held = Signal(32), Signal(32), Signal()
        nbytes = Signal(2)
        fixed = (cmd == CMD_WRITE_FIXED) | (cmd == CMD_READ_FIXED)
        writing = (cmd == CMD_WRITE) | (cmd == CMD_WRITE_FIXED)
        region = addr[REGION_SHIFT:]
        wide = Signal()
        m.d.comb += wide.eq((region == WIDE_REGIONS[0]) | (region == WIDE_REGIONS[1]) | (region == WIDE_REGIONS[2]))
        half = addr[2]
        bus = self.bus
        m.d.comb += [
            bus.addr.eq(Mux(wide, Cat(Const(0, 3), addr[3:]), addr)),
            bus.wdata.eq(Mux(has_held, Cat(held, word), Cat(word, word))),
            bus.wstrb.eq(Mux(has_held, 0xFF, Mux(half, 0xF0, 0x0F))),
            self.error.eq(bus.ack & bus.err),
        ]
        next_byte = Cat(byte, word[:24])  # big endian: the new byte is the least significant so far
        timed_out = rx.idle_bits >= RX_TIMEOUT_BITS

        def advance():
            """After a word: the next address (incrementing frames), the count, back to CMD after the last."""
            with m.If(~fixed):
                m.d.sync += addr.eq(addr + 4)
            m.d.sync += count.eq(count - 1)

        with m.FSM():
            with m.State("CMD"):
                m.d.sync += has_held.eq(0)
                with m.If(got):
                    m.d.comb += take.eq(1)
                    m.d.sync += cmd.eq(byte)
                    with m.If((byte >= CMD_WRITE) & (byte <= CMD_READ_FIXED)):
                        m.next = "LEN"
            with m.State("LEN"):
                with m.If(got):
                    m.d.comb += take.eq(1)
                    m.d.sync += [count.eq(byte), nbytes.eq(0)]
                    m.next = "ADDR"
                with m.Elif(timed_out):
                    m.next = "CMD"
            with m.State("ADDR"):
                with m.If(got):
                    m.d.comb += take.eq(1)
                    m.d.sync += [word.eq(next_byte), nbytes.eq(nbytes + 1)]
                    with m.If(nbytes == 3):
                        m.d.sync += addr.eq(Cat(Const(0, 2), next_byte[:30]))
                        with m.If(count == 0):
                            m.next = "CMD"
                        with m.Elif(writing):
                            m.next = "DATA"
                        with m.Else():
                            m.next = "READ"
                with m.Elif(timed_out):
                    m.next = "CMD"
            with m.State("DATA"):
                with m.If(got):
                    m.d.comb += take.eq(1)
                    m.d.sync += [word.eq(next_byte), nbytes.eq(nbytes + 1)]
                    with m.If(nbytes == 3):
                        with m.If(wide & ~half & ~fixed & (count > 1)):
                            m.d.sync += [held.eq(next_byte), has_held.eq(1)]
                            advance()
                        with m.Else():
                            m.next = "WRITE"
                with m.Elif(timed_out):
                    m.next = "CMD"
            with m.State("WRITE"):
                m.d.comb += [bus.req.eq(1), bus.we.eq(1)]
                with m.If(bus.ack):
                    m.d.sync += has_held.eq(0)
                    advance()
                    m.next = "WRITTEN"
            with m.State("WRITTEN"):
                m.next = "DATA"
                with m.If(count == 0):
                    m.next = "CMD"
            with m.State("READ"):
                m.d.comb += bus.req.eq(1)
                with m.If(bus.ack):
                    m.d.sync += [word.eq(Mux(half, bus.rdata[32:], bus.rdata[:32])), nbytes.eq(0)]
                    m.next = "SEND"
            with m.State("SEND"):
                m.d.comb += [tx.valid.eq(1), tx.data.eq(word[24:])]
                with m.If(tx.ready):
                    m.d.sync += [word.eq(word << 8), nbytes.eq(nbytes + 1)]
                    with m.If(nbytes == 3):
                        advance()
                        m.next = "SENT"
            with m.State("SENT"):
                m.next = "READ"
                with m.If(count == 0):
                    m.next = "CMD"
        return m
