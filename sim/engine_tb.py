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

from pezo.golden.zo.int8_head import Int8TrainConfig
from pezo.sim.cocotb_io import CocotbIO
from pezo.sim.engine_host import zo_training
from pezo.sim.scoreboard import start_and_reset


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
