"""The simulation transport of ``pezo.driver.engine``: cocotbext-axi's ``AxiLiteMaster`` on ``s_axil`` and
``AxiMaster`` on ``s_axi`` of the engine top, ``irq`` watched on the clock, and cycle counters for the
figures (``now()``: clock cycles since the bus was made; ``busy``: cycles spent inside bus calls)."""

from __future__ import annotations

import cocotb
from cocotb.triggers import RisingEdge


class CocotbBus:
    """The driver's bus over a cocotb DUT of ``hw.engine_top.EngineTop`` (clock ``clk``, reset ``rst``)."""

    irq = True

    def __init__(self, dut):
        from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiMaster

        self.dut = dut
        self.lite = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
        self.axi = AxiMaster(AxiBus.from_prefix(dut, "s_axi_"), dut.clk, dut.rst)
        for channel in (self.lite.write_if, self.lite.read_if, self.axi.write_if, self.axi.read_if):
            channel.log.setLevel("WARNING")
        self.cycle = 0
        self.busy = 0
        self.transfers = 0
        cocotb.start_soon(self._count())

    async def _count(self) -> None:
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1

    def now(self) -> int:
        return self.cycle

    async def _timed(self, operation):
        start = self.cycle
        result = await operation
        self.busy += self.cycle - start
        self.transfers += 1
        return result

    async def read32(self, addr: int) -> tuple[int, int]:
        got = await self._timed(self.lite.read(addr, 4))
        return int.from_bytes(got.data, "little"), int(got.resp)

    async def write32(self, addr: int, value: int) -> int:
        got = await self._timed(self.lite.write(addr, int(value & 0xFFFFFFFF).to_bytes(4, "little")))
        return int(got.resp)

    async def write_burst(self, addr: int, data: bytes) -> int:
        got = await self._timed(self.axi.write(addr, bytes(data)))
        return int(got.resp)

    async def read_burst(self, addr: int, n: int) -> tuple[bytes, int]:
        got = await self._timed(self.axi.read(addr, n))
        return bytes(got.data), int(got.resp)

    async def wait_irq(self) -> None:
        while not int(self.dut.irq.value):
            await RisingEdge(self.dut.clk)
