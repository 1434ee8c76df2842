"""Quick-loop simulation of pezo components on Amaranth's own simulator (no external tools)."""

from __future__ import annotations

from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from pezo.hw.engine.zo_engine import ZOEngine
from pezo.sim.benches import make_bench


def check_against_golden(bench_name: str, config, cycles: int, stim_seed: int = 1) -> int:
    """Run the bench's component for ``cycles`` (after one clock edge in reset, as the cocotb benches);
    assert every output bit golden names equals golden each cycle. Returns the number of cycles checked."""
    bench = make_bench(bench_name, config, cycles, stim_seed)
    dut = bench.component()

    async def testbench(ctx):
        for cycle in range(cycles):
            for name, expected in bench.expected().items():
                if expected is None:
                    continue
                port = getattr(dut, name)
                got = ctx.get(port.as_value() if hasattr(port, "as_value") else port)
                assert got == expected, f"{bench_name} cycle {cycle}: {name} {got:#x} != golden {expected:#x}"
            inputs = bench.drive(cycle)
            for name, value in inputs.items():
                ctx.set(getattr(dut, name), value)
            bench.step(inputs)
            await ctx.tick()

    simulate(dut, testbench)
    bench.check_coverage(cycles)
    return cycles


class AmaranthIO:
    """The hosts' adapter (``sim.host_driver``) over an Amaranth testbench context: ports by name, ints in and out."""

    def __init__(self, ctx, dut):
        self.ctx, self.dut = ctx, dut

    def _port(self, name: str):
        port = getattr(self.dut, name)
        return port.as_value() if hasattr(port, "as_value") else port

    def set(self, name: str, value: int) -> None:
        self.ctx.set(self._port(name), value)

    def get(self, name: str) -> int:
        return int(self.ctx.get(self._port(name)))

    async def tick(self) -> None:
        await self.ctx.tick()

    async def wait_any(self, names, limit: int) -> int:
        """Tick until one of the outputs ``names`` reads 1 after an edge, or ``limit`` cycles; return the
        cycles ticked (at least 1) -- as ``sim.cocotb_io.CocotbIO.wait_any``, one tick at a time."""
        waited = 0
        while waited < limit:
            await self.ctx.tick()
            waited += 1
            if any(self.get(name) for name in names):
                break
        return waited


def run_engine_host(config, host):
    """Run ``await host(io)`` against ``hw.engine.zo_engine.ZOEngine(config)`` on Amaranth's simulator (after
    one edge in reset) and return its result."""
    return run_host(ZOEngine(config), host)


def run_host(dut, host, monitors=()):
    """Run ``await host(io)`` against the component ``dut`` on Amaranth's simulator (after one edge in
    reset) and return its result."""
    result = {}

    async def testbench(ctx):
        result["value"] = await host(AmaranthIO(ctx, dut))

    simulate(dut, testbench, monitors)
    return result["value"]


def simulate(dut, testbench, monitors=()):
    """The clock and reset wrapper of every Amaranth-simulator run: ``dut`` in a ``sync`` domain (10 ns
    clock); ``await testbench(ctx)`` runs after one clock edge in reset with all inputs low (like the cocotb
    benches' reset, ``sim.scoreboard.start_and_reset``); each ``await monitor(ctx)`` runs beside it (a
    background testbench: it may loop forever)."""
    top = Module()
    top.submodules.dut = dut
    top.domains.sync = domain = ClockDomain("sync")

    async def bench(ctx):
        ctx.set(domain.rst, 1)
        await ctx.tick()
        ctx.set(domain.rst, 0)
        await testbench(ctx)

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    for monitor in monitors:
        sim.add_testbench(monitor, background=True)
    sim.run()
