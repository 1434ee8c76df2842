"""The simulation transport of ``pezo.driver.engine``: cocotbext-axi's ``AxiLiteMaster`` on ``s_axil`` and
``AxiMaster`` on ``s_axi`` of the engine top, ``irq`` awaited as an edge, and cycle counters for the
figures (``now()``: clock cycles since the bus was made, from the simulation time -- no per-cycle task;
``busy``: cycles spent inside bus calls)."""

from __future__ import annotations

from cocotb.simtime import get_sim_time
from cocotb.triggers import RisingEdge

from pezo.sim.scoreboard import CLOCK_PERIOD_NS


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
        self.busy = 0
        self.transfers = 0
        self._made = get_sim_time("ns")  # the bus is made between rising edges (at a falling edge)

    @property
    def cycle(self) -> int:
        """Rising clock edges since the bus was made (one at ``_made`` + half a period, then every period)."""
        return int((get_sim_time("ns") - self._made + CLOCK_PERIOD_NS / 2) // CLOCK_PERIOD_NS)

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
        """Return at the first rising clock edge that sees ``irq`` high (at once if it is high now)."""
        if not int(self.dut.irq.value):
            await RisingEdge(self.dut.irq)
            await RisingEdge(self.dut.clk)
