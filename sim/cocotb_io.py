"""The host drivers' port adapter over a cocotb DUT (``sim.host_driver``): ``set``, ``get``, ``tick`` and
``wait_any``. Kept apart from the testbenches so that each imports only what its own host needs."""

from __future__ import annotations

from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, First, RisingEdge, Timer

from pezo.sim.scoreboard import CLOCK_PERIOD_NS


class CocotbIO:
    """``sim.host_driver``'s adapter over a cocotb DUT (inputs set between falling edges). Port handles are
    looked up once; a write of the value a port already holds is skipped (the host is the only writer, so
    the port keeps it): each cycle crosses into the simulator only for what changes."""

    def __init__(self, dut):
        self.dut = dut
        self._handles: dict = {}
        self._written: dict[str, int] = {}
        self._falling = FallingEdge(dut.clk)

    def _handle(self, name: str):
        handle = self._handles.get(name)
        if handle is None:
            handle = self._handles[name] = getattr(self.dut, name)
        return handle

    def set(self, name: str, value: int) -> None:
        value = int(value)
        if self._written.get(name) != value:
            self._handle(name).value = value
            self._written[name] = value

    def get(self, name: str) -> int:
        return int(self._handle(name).value)

    async def tick(self) -> None:
        await self._falling

    async def wait_any(self, names, limit: int) -> int:
        """Tick until one of the outputs ``names`` reads 1 after an edge, or ``limit`` cycles; return the
        cycles ticked (at least 1). The same as ticking and checking every cycle, but the simulator runs
        free until one of them rises (outputs change only at rising edges, read at the falling edge after)."""
        handles = [self._handle(name) for name in names]
        waited = 0
        while waited < limit:
            if any(int(h.value) for h in handles):  # already high: no rising edge to wait for
                await self._falling
                waited += 1
            else:
                start = get_sim_time("ns")
                watchdog = Timer(((limit - waited - 1) + 0.25) * CLOCK_PERIOD_NS, unit="ns")
                await First(*(RisingEdge(h) for h in handles), watchdog)
                await self._falling
                waited += round((get_sim_time("ns") - start) / CLOCK_PERIOD_NS)
            if any(int(h.value) for h in handles):
                break
        return waited
