"""A UART (8N1, no parity, one stop bit, LSB first) at ``divisor`` clock cycles per bit: ``UARTReceiver`` and
``UARTTransmitter``.

* Receiver: ``rx`` is synchronised (two flip-flops); a falling edge starts a frame, which is sampled in the
  middle of each bit; a byte whose stop bit is 1 pulses ``valid`` for one cycle with ``data`` (held until the
  next byte); a start bit that is 1 again at its middle (a glitch) or a 0 stop bit drops the frame. ``idle_bits``
  counts bit times since the last byte, saturating (for a frame timeout).
* Transmitter: while ``ready`` (idle) a ``valid`` cycle latches ``data`` and sends start, 8 data, stop bits on
  ``tx`` (high when idle).
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

IDLE_BITS_MAX = 1023


def check_divisor(divisor: int) -> int:
    if not isinstance(divisor, int) or not 4 <= divisor <= 1 << 16:
        raise ValueError(f"divisor (clock cycles per bit) must be in 4..65536, got {divisor!r}")
    return divisor


class UARTReceiver(wiring.Component):
    """Ports ``rx`` (In 1, the line), ``data`` (Out 8), ``valid`` (Out 1, one cycle per byte), ``idle_bits``."""

    def __init__(self, divisor: int):
        self.divisor = check_divisor(divisor)
        super().__init__(
            {"rx": In(1, init=1), "data": Out(8), "valid": Out(1), "idle_bits": Out(range(IDLE_BITS_MAX + 1))}
        )

    def elaborate(self, platform):
        m = Module()
        line = Signal(init=1)
        m.submodules.sync_rx = FFSynchronizer(self.rx, line, init=1)
        timer = Signal(range(self.divisor))
        bit = Signal(range(10))  # 0 start, 1..8 data, 9 stop
        busy = Signal()
        shift = Signal(8)
        idle_timer = Signal(range(self.divisor))
        m.d.sync += self.valid.eq(0)
        with m.If(idle_timer == self.divisor - 1):
            m.d.sync += idle_timer.eq(0)
            with m.If(self.idle_bits != IDLE_BITS_MAX):
                m.d.sync += self.idle_bits.eq(self.idle_bits + 1)
        with m.Else():
            m.d.sync += idle_timer.eq(idle_timer + 1)
        with m.If(~busy):
            with m.If(~line):
                m.d.sync += [busy.eq(1), bit.eq(0), timer.eq(self.divisor // 2 - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += timer.eq(self.divisor - 1)
            with m.If(bit == 0):
                with m.If(line):  # a glitch, not a start bit
                    m.d.sync += busy.eq(0)
            with m.Elif(bit == 9):
                m.d.sync += busy.eq(0)
                with m.If(line):
                    m.d.sync += [self.data.eq(shift), self.valid.eq(1), self.idle_bits.eq(0), idle_timer.eq(0)]
            with m.Else():
                m.d.sync += shift.eq(line << 7 | shift >> 1)
            m.d.sync += bit.eq(bit + 1)
        return m


class UARTTransmitter(wiring.Component):
    """Ports ``data`` (In 8), ``valid`` (In 1), ``ready`` (Out 1: idle, a ``valid`` is taken), ``tx`` (Out 1)."""

    def __init__(self, divisor: int):
        self.divisor = check_divisor(divisor)
        super().__init__({"data": In(8), "valid": In(1), "ready": Out(1), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divisor))
        frame = Signal(10, init=0x3FF)  # stop . data . start, shifted out LSB first
        left = Signal(range(11))
        m.d.comb += [self.ready.eq(left == 0), self.tx.eq(frame[0])]
        with m.If(left == 0):
            with m.If(self.valid):
                m.d.sync += [frame.eq(1 << 9 | self.data << 1), left.eq(10), timer.eq(self.divisor - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [frame.eq(1 << 9 | frame >> 1), left.eq(left - 1), timer.eq(self.divisor - 1)]
        return m
