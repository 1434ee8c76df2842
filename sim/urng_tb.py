"""cocotb testbench: the Amaranth URNG array against ``golden.urng.URNGArray``, every lane, every cycle.

Driver: ``sim.stimulus.URNGStimulus`` (seeded ``en``; with rewind, saves and restores in the middle
of the run, plus random ones). Golden: steps with the same inputs. Scoreboard: compares the
packed ``lanes`` word (every bit of every lane) and ``pointer`` each cycle.
Environment: ``PEZO_CONFIG`` (JSON of the PerturbConfig), ``PEZO_CYCLES``, ``PEZO_STIM_SEED``,
``PEZO_RESULT`` (where to write cycles/s).
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import FallingEdge

from golden.urng import URNGArray
from sim.stimulus import URNGStimulus
from sim.scoreboard import Scoreboard, config_from_env, env_int, pack, start_and_reset, unpack


@cocotb.test()
async def urng_matches_golden(dut):
    cfg = config_from_env()
    cycles = env_int("PEZO_CYCLES", 10_000)
    model = URNGArray(cfg)
    driver = URNGStimulus(cfg.rewind, cycles, env_int("PEZO_STIM_SEED", 1))
    board = Scoreboard(f"URNGArray{cfg.n_rngs}x{cfg.rng_bits}{' rewind' if cfg.rewind else ''}")
    b, n = cfg.rng_bits, cfg.n_rngs
    dut.en.value = 0
    if cfg.rewind:
        dut.save.value = 0
        dut.restore.value = 0
    await start_and_reset(dut)
    for cycle in range(cycles):
        board.compare(cycle, "lanes", dut.lanes.value.to_unsigned(), pack(model.raw_lanes(), b),
                      decode=lambda w: unpack(w, b, n))
        board.compare(cycle, "pointer", dut.pointer.value.to_unsigned(), model.pointer)
        en, save, restore = driver.next(cycle, model.pointer)
        dut.en.value = en
        if cfg.rewind:
            dut.save.value = save
            dut.restore.value = restore
            model.step(en=bool(en), save=bool(save), restore=bool(restore))
        else:
            model.step(en=bool(en))
        await FallingEdge(dut.clk)
    result = board.report(cycles, {"saves": driver.honoured_saves, "rewinds": driver.restores})
    dut._log.info("%d cycles, %d saves, %d rewinds, %.0f cycles/s", cycles, driver.honoured_saves,
                  driver.restores, result["cycles_per_s"])
    assert not cfg.rewind or (driver.honoured_saves >= 2 and driver.restores >= 2)
