"""cocotb testbench of the network engine: the testbench is the host (``sim.net_host.net_training``): it
keeps the batch queue filled while the engine trains, reads every step's logits, and compares every
logit, loss, g and the final weights with golden.

Environment: ``PEZO_NET`` (``NetConfig`` JSON), ``PEZO_LOSS`` (``LossConfig`` JSON), ``PEZO_OVERLAP``
(1: load while computing), ``PEZO_HOST_G`` (host mode: the trainer's g, ``runner.run_net_engine``),
``PEZO_ENGINE_DATA`` (npz: xs [steps, batch, inputs] int8, labels [steps, batch], weights (global order),
optional biases_<layer>), ``PEZO_RESULT``. The result JSON is written before the test fails on a mismatch, so
the caller can report ``match``.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
import numpy as np

from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.network import NetConfig
from pezo.sim.cocotb_io import CocotbIO
from pezo.sim.net_host import net_training
from pezo.sim.scoreboard import start_and_reset


@cocotb.test()
async def net_engine_trains_like_golden(dut):
    config = NetConfig.from_dict(json.loads(os.environ["PEZO_NET"]))
    loss = LossConfig(**json.loads(os.environ["PEZO_LOSS"]))
    with np.load(os.environ["PEZO_ENGINE_DATA"]) as f:
        xs, labels, weights = f["xs"], f["labels"], f["weights"]
        biases = [f[f"biases_{i}"] for i in range(len(config.layers))] if "biases_0" in f.files else None
    for name in ("start", "w_we", "x_we", "y_we", "push") + (("b_we",) if biases is not None else ()):
        getattr(dut, name).value = 0
    g_of = None
    if os.environ.get("PEZO_HOST_G"):  # host mode with the trainer's cross-entropy g
        from pezo.golden.zo.int8_net import host_g
        from pezo.golden.zo.net_config import NetTrainConfig

        spec = json.loads(os.environ["PEZO_HOST_G"])
        train, act_exponent = NetTrainConfig.from_dict(spec["train"]), int(spec["act_exponent"])
        g_of = lambda plus, minus, labels: host_g(plus, minus, labels, train, act_exponent)[0]  # noqa: E731
    await start_and_reset(dut, cycles=2)
    started = time.perf_counter()
    result = await net_training(
        CocotbIO(dut),
        config,
        loss,
        xs,
        labels,
        weights,
        biases,
        overlap=os.environ.get("PEZO_OVERLAP", "1") == "1",
        g_of=g_of,
    )
    result["test_seconds"] = time.perf_counter() - started
    with open(os.environ["PEZO_RESULT"], "w") as f:
        json.dump(result, f, indent=2)
    dut._log.info("net engine: match %s, %s cycles/step", result["match"], result["cycles_per_step"])
    assert result["match"], f"RTL differs from golden: {result['mismatches']}"
