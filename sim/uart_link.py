"""The co-simulation's UART link for ``pezo.driver.uart_bus.UartBus``: cocotbext-uart's ``UartSource`` drives the
trainer top's ``rx`` pin, its ``UartSink`` listens on ``tx``, at ``divisor`` clock cycles per bit (the bit time
``divisor * CLOCK_PERIOD_NS`` ns); ``now()`` counts clock cycles from the simulation time."""

from __future__ import annotations

from cocotb.simtime import get_sim_time

from pezo.sim.scoreboard import CLOCK_PERIOD_NS


class CocotbUartLink:
    """``async write(data)`` returns once the bytes are on the line; ``async read(n)`` waits for ``n`` bytes."""

    def __init__(self, dut, divisor: int):
        from cocotbext.uart import UartSink, UartSource

        baud = 1e9 / (divisor * CLOCK_PERIOD_NS)
        self.source, self.sink = UartSource(dut.rx, baud=baud), UartSink(dut.tx, baud=baud)
        for end in (self.source, self.sink):
            end.log.setLevel("WARNING")
        self._pending = bytearray()

    async def write(self, data: bytes) -> None:
        await self.source.write(bytes(data))
        await self.source.wait()

    async def read(self, n: int) -> bytes:
        while len(self._pending) < n:
            self._pending += await self.sink.read(-1)
        out, self._pending = bytes(self._pending[:n]), self._pending[n:]
        return out

    @staticmethod
    def cycle() -> int:
        return int(get_sim_time("ns") // CLOCK_PERIOD_NS)
