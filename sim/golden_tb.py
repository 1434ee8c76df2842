"""cocotb testbench for every pezo block: a bench (``sim.benches``) drives the DUT, steps golden with
the same inputs, and a scoreboard compares every output bit every cycle.

Environment: ``PEZO_BENCH`` (bench name), ``PEZO_CONFIG`` (PerturbConfig JSON), ``PEZO_CYCLES``,
``PEZO_STIM_SEED``, ``PEZO_RESULT`` (JSON file for cycles/s and coverage counts).
"""

from __future__ import annotations

import os

import cocotb
from cocotb.triggers import FallingEdge

from pezo.sim.benches import make_bench
from pezo.sim.scoreboard import Scoreboard, config_from_env, env_int, start_and_reset


def port_value(handle) -> int:
    """A port's value as an unsigned integer (a 1-bit port is a ``Logic``, wider ones a ``LogicArray``)."""
    value = handle.value
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


@cocotb.test()
async def matches_golden(dut):
    cfg = config_from_env()
    cycles = env_int("PEZO_CYCLES", 10_000)
    bench = make_bench(os.environ["PEZO_BENCH"], cfg, cycles, env_int("PEZO_STIM_SEED", 1))
    board = Scoreboard(f"{os.environ['PEZO_BENCH']} {cfg}")
    ports = {name: getattr(dut, name) for name in bench.inputs}
    outputs = {name: getattr(dut, name) for name in bench.expected()}
    for handle in ports.values():
        handle.value = 0
    held = dict.fromkeys(ports, 0)  # what each input holds: a write of the same value is skipped
    falling = FallingEdge(dut.clk)
    await start_and_reset(dut)
    for cycle in range(cycles):
        for name, expected in bench.expected().items():
            if expected is None:  # not defined this cycle (e.g. lanes while not valid)
                continue
            board.compare(
                cycle,
                name,
                port_value(outputs[name]),
                expected,
                decode=lambda word, name=name: bench.decode(name, word),
            )
        inputs = bench.drive(cycle)
        for name, value in inputs.items():
            if held[name] != value:
                ports[name].value = value
                held[name] = value
        bench.step(inputs)
        await falling
    result = board.report(cycles, bench.summary())
    dut._log.info("%d cycles, %.0f cycles/s, %s", cycles, result["cycles_per_s"], bench.summary())
    bench.check_coverage(cycles)
