"""Quick-loop simulation of pezo components on Amaranth's own simulator (no external tools)."""

from __future__ import annotations

from amaranth.sim import Simulator

from golden.urng import URNGArray as GoldenURNGArray
from hw.urng import URNGArray
from sim.stimulus import URNGStimulus


def check_urng_against_golden(config, cycles: int, stim_seed: int = 1) -> int:
    """Run the Amaranth URNG array for ``cycles`` with seeded stimulus; assert every output bit equals
    golden each cycle. Returns the number of cycles checked."""
    dut = URNGArray(config)
    model = GoldenURNGArray(config)
    stimulus = URNGStimulus(config.rewind, cycles, stim_seed)
    b = config.rng_bits

    async def bench(ctx):
        for cycle in range(cycles):
            expected = 0
            for i, state in enumerate(model.raw_lanes().tolist()):
                expected |= state << (i * b)
            got = ctx.get(dut.lanes.as_value())
            assert got == expected, f"cycle {cycle}: lanes {got:#x} != golden {expected:#x}"
            assert ctx.get(dut.pointer) == model.pointer, f"cycle {cycle}: pointer"
            en, save, restore = stimulus.next(cycle, model.pointer)
            ctx.set(dut.en, en)
            if config.rewind:
                ctx.set(dut.save, save)
                ctx.set(dut.restore, restore)
                model.step(en=bool(en), save=bool(save), restore=bool(restore))
            else:
                model.step(en=bool(en))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    if config.rewind and cycles >= 100:
        assert stimulus.honoured_saves >= 2 and stimulus.restores >= 2, "stimulus did not rewind"
    return cycles
