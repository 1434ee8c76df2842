"""cocotb testbench of the ZO engine: the testbench is the host (``sim.engine_host.zo_training``) and
runs real ZO steps on the RTL, comparing every logit of every pass and the final weights with golden.

Environment: ``PEZO_TRAIN`` (``Int8TrainConfig`` JSON, engine included), ``PEZO_ENGINE_DATA`` (npz:
xs [steps, batch, inputs] int8, labels [steps, batch], act_exponent, optional weights), ``PEZO_RESULT``.
The result JSON is written before the test fails on a mismatch, so the caller can report ``match``.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
import numpy as np
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, First, RisingEdge, Timer

from pezo.golden.zo.int8_head import Int8TrainConfig
from pezo.sim.engine_host import zo_training
from pezo.sim.scoreboard import CLOCK_PERIOD_NS, start_and_reset


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


@cocotb.test()
async def engine_trains_like_golden(dut):
    train = Int8TrainConfig.from_dict(json.loads(os.environ["PEZO_TRAIN"]))
    with np.load(os.environ["PEZO_ENGINE_DATA"]) as f:
        xs, labels, act_exponent = f["xs"], f["labels"], int(f["act_exponent"])
        weights = f["weights"] if "weights" in f.files else None
    for name in ("start", "w_we", "x_we"):
        getattr(dut, name).value = 0
    await start_and_reset(dut, cycles=2)
    started = time.perf_counter()
    result = await zo_training(CocotbIO(dut), train, xs, labels, act_exponent, weights)
    result["test_seconds"] = time.perf_counter() - started
    with open(os.environ["PEZO_RESULT"], "w") as f:
        json.dump(result, f, indent=2)
    dut._log.info("engine: match %s, %s cycles/step", result["match"], result["cycles_per_step"])
    assert result["match"], f"RTL differs from golden: {result['mismatches']}"
