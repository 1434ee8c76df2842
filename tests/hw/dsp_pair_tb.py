"""cocotb testbench of ``test_ecp5_dsp``: random inputs (and resets) into a pair of ``PEArray`` variants with
shared inputs; every cycle the ECP5 variant's outputs (``out_valid``, ``out_tag``, ``sums``) must equal the
generic variant's (``ref_*``). Environment: ``PEZO_CYCLES``, ``PEZO_STIM_SEED``, ``PEZO_INPUTS`` (JSON: input
port -> width)."""

from __future__ import annotations

import json
import os
import random

import cocotb
from cocotb.triggers import FallingEdge

from pezo.sim.golden_tb import port_value
from pezo.sim.scoreboard import Scoreboard, env_int, start_and_reset

OUTPUTS = ("out_valid", "out_tag", "sums")


@cocotb.test()
async def ecp5_matches_generic(dut):
    cycles, rng = env_int("PEZO_CYCLES", 2000), random.Random(env_int("PEZO_STIM_SEED", 1))
    widths = json.loads(os.environ["PEZO_INPUTS"])
    board = Scoreboard("PEArray ECP5 vs generic")
    falling = FallingEdge(dut.clk)
    for name in widths:
        getattr(dut, name).value = 0
    await start_and_reset(dut)
    resets = 0
    for cycle in range(cycles):
        for name in OUTPUTS:
            board.compare(cycle, name, port_value(getattr(dut, name)), port_value(getattr(dut, f"ref_{name}")))
        for name, width in widths.items():
            getattr(dut, name).value = rng.getrandbits(width)
        reset = rng.random() < 0.01
        resets += reset
        dut.rst.value = int(reset)
        await falling
    board.report(cycles, {"resets": resets})
    assert resets > 0, "no reset was exercised"
