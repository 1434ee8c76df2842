"""cocotb testbench of ``test_ecp5_dsp``: random writes, reads and resets into a pair of weight memories with shared
inputs, ``hw.engine.ebr``'s (``data``) and an inferred memory followed by a register (``ref_data``); they must agree
in every cycle but the two after a reset (the block's reset also clears its read latch). The pair never writes the
word it reads in that cycle (undefined on the block). Environment: ``PEZO_CYCLES``, ``PEZO_STIM_SEED``,
``PEZO_DEPTH``, ``PEZO_WIDTH``, ``PEZO_LANES`` (the write enable's bits)."""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge

from pezo.sim.golden_tb import port_value
from pezo.sim.scoreboard import Scoreboard, env_int, start_and_reset


@cocotb.test()
async def ebr_matches_inferred(dut):
    cycles, rng = env_int("PEZO_CYCLES", 3000), random.Random(env_int("PEZO_STIM_SEED", 1))
    depth, width, lanes = env_int("PEZO_DEPTH", 1), env_int("PEZO_WIDTH", 1), env_int("PEZO_LANES", 1)
    board = Scoreboard("ebr_memory vs inferred memory + register")
    falling = FallingEdge(dut.clk)
    for name in ("write_addr", "write_data", "write_en", "read_addr"):
        getattr(dut, name).value = 0
    await start_and_reset(dut)
    resets, since_reset, compared, nonzero, written = 0, 2, 0, 0, []
    for cycle in range(cycles):
        if since_reset >= 2:
            ref = port_value(dut.ref_data)
            board.compare(cycle, "data", port_value(dut.data), ref)
            compared += 1
            nonzero += ref != 0
        address = rng.randrange(depth)
        dut.write_addr.value = address
        dut.write_data.value = rng.getrandbits(width)
        enable = rng.randrange(1, 1 << lanes) if rng.random() < 0.5 else 0
        dut.write_en.value = enable
        if enable:
            written.append(address)
        # half the reads at a word written before, so that a deep memory reads back more than its reset zeros
        read = rng.choice(written) if written and rng.random() < 0.5 else rng.randrange(depth)
        dut.read_addr.value = read
        reset = rng.random() < 0.01
        resets += reset
        since_reset = 0 if reset else since_reset + 1
        dut.rst.value = int(reset)
        await falling
    board.report(cycles, {"resets": resets, "compared": compared})
    assert resets > 0 and nonzero > cycles // 4, (resets, nonzero)
