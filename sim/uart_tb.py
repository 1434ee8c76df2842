"""cocotb testbench of the ULX3S trainer top (``hw.uart_top.UartEngineTop``): the one driver
(``pezo.driver.engine.EngineDriver`` over ``pezo.driver.uart_bus.UartBus``) talks UARTBone through cocotbext-uart
on the ``rx`` / ``tx`` pins: identity, weights written and read back, the training set loaded into the data
memory, one TRAIN of ``PEZO_STEPS`` steps fed on chip (``pezo.driver.on_chip``), then the step log and the final
weights against golden (``golden.engine.network.NetEngine`` on ``golden.regs.uart_link.feed_indices``' batches).

Environment: ``PEZO_NET`` (``NetConfig`` JSON), ``PEZO_LOSS`` (``LossConfig`` JSON), ``PEZO_ENGINE_DATA`` (npz:
xs [n, inputs], labels [n], weights), ``PEZO_STEPS``, ``PEZO_START``, ``PEZO_DIVISOR``, ``PEZO_RESULT``,
``PEZO_HOST_FED_STEPS`` (default 0; then that many more steps with batches written over the UART: the measured
link cost). The result JSON is written before the test fails.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
import numpy as np

from pezo.driver.engine import EngineDriver
from pezo.driver.on_chip import OnChipTrainer, golden_order
from pezo.driver.uart_bus import UartBus
from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.network import NetConfig, NetEngine
from pezo.golden.regs.engine import BoardMap
from pezo.sim.scoreboard import start_and_reset
from pezo.sim.uart_link import CocotbUartLink


async def _host_fed_steps(driver: EngineDriver, model: NetEngine, loss: LossConfig, bx, by, steps: int) -> dict:
    """``steps`` more TRAIN steps with the batches written through the windows over the UART (the AXI top's way,
    ``EngineDriver.train`` without logits): the measured link cost of a batch against the engine's step."""
    if steps == 0:
        return {"mismatches": []}
    bus, bad = driver.bus, []
    xs, ys = bx[np.arange(steps) % len(bx)], by[np.arange(steps) % len(by)]
    sent, t0 = bus.sent + bus.received, bus.now()
    run = await driver.train(xs, ys, loss, read_logits=False, use_irq=False)
    cycles, link_bytes = bus.now() - t0, bus.sent + bus.received - sent
    for k, got in enumerate(run.steps):
        want = model.train_step(xs[k], ys[k], loss)
        if (got.loss_plus, got.loss_minus, got.g) != (want.loss_plus, want.loss_minus, want.g):
            bad.append(f"host-fed step {k} differs from golden")
    if not np.array_equal(await driver.read_weights(), model.flat):
        bad.append("weights after the host-fed steps differ from golden")
    return {
        "mismatches": bad,
        "steps": steps,
        "cycles_per_step": cycles / steps,
        "link_bytes_per_step": link_bytes / steps,
        "engine_busy_cycles_per_step": run.engine_cycles / steps,
        "engine_wait_cycles": run.wait_cycles,
    }


@cocotb.test()
async def uart_top_trains_like_golden(dut):
    config = NetConfig.from_dict(json.loads(os.environ["PEZO_NET"]))
    loss = LossConfig(**json.loads(os.environ["PEZO_LOSS"]))
    steps, start, divisor = (int(os.environ[k]) for k in ("PEZO_STEPS", "PEZO_START", "PEZO_DIVISOR"))
    with np.load(os.environ["PEZO_ENGINE_DATA"]) as f:
        xs, labels, weights = f["xs"], f["labels"], f["weights"]
    dut.rx.value = 1
    await start_and_reset(dut, cycles=4)
    started = time.perf_counter()
    link = CocotbUartLink(dut, divisor)
    bus = UartBus(link, clock=link.cycle)
    driver = EngineDriver(bus, BoardMap(config))
    trainer = OnChipTrainer(driver)
    mismatches: list[str] = []
    await driver.check_identity()
    model = NetEngine(config, weights)
    t0 = bus.now()
    await driver.load_weights(model.flat)
    load_weights_cycles = bus.now() - t0
    if not np.array_equal(await driver.read_weights(), model.flat):
        mismatches.append("weights read back differ")
    t0 = bus.now()
    examples = await trainer.load(xs, labels)
    load_data_cycles, sent_before = bus.now() - t0, bus.sent + bus.received
    t0 = bus.now()
    run = await trainer.train(steps, loss, start=start)
    train_cycles = bus.now() - t0
    train_link_bytes = bus.sent + bus.received - sent_before
    bx, by = golden_order(xs, labels, start, config.array.batch, steps)
    records = []
    for k in range(steps):
        want = model.train_step(bx[k], by[k], loss)
        if k < run.first_step:
            continue
        got = run.steps[k - run.first_step]
        records.append({"loss_plus": got.loss_plus, "loss_minus": got.loss_minus, "g": got.g})
        if (got.loss_plus, got.loss_minus, got.g) != (want.loss_plus, want.loss_minus, want.g):
            mismatches.append(
                f"step {k}: rtl {(got.loss_plus, got.loss_minus, got.g)} != golden "
                f"{(want.loss_plus, want.loss_minus, want.g)}"
            )
    final = await driver.read_weights()
    if not np.array_equal(final, model.flat):
        mismatches.append("final weights differ from golden")
    host_fed = await _host_fed_steps(driver, model, loss, bx, by, int(os.environ.get("PEZO_HOST_FED_STEPS", "0")))
    mismatches += host_fed.pop("mismatches")
    link_errors = await bus.link_errors()
    if run.pushed != steps:
        mismatches.append(f"the feeder pushed {run.pushed} batches, expected {steps}")
    if link_errors:
        mismatches.append(f"{link_errors} accesses answered SLVERR")
    result = {
        "match": not mismatches,
        "mismatches": mismatches[:10],
        "steps": steps,
        "examples": examples,
        "start": start,
        "divisor": divisor,
        "engine_cycles_per_step": run.engine_cycles / steps,
        "wait_cycles": run.wait_cycles,
        "cycle_bound": config.cycle_bound(),
        "train_cycles": train_cycles,
        "train_link_bytes": train_link_bytes,
        "status_polls": run.polls,
        "load_weights_cycles": load_weights_cycles,
        "load_data_cycles": load_data_cycles,
        "feeder_pushed": run.pushed,
        "link_errors": link_errors,
        "records": records,
        "final_weights_nonzero": int(np.count_nonzero(final)),
        "link_bytes": bus.sent + bus.received,
        "host_fed": host_fed,
        "test_seconds": time.perf_counter() - started,
    }
    with open(os.environ["PEZO_RESULT"], "w") as f:
        json.dump(result, f, indent=2)
    dut._log.info("uart top: match %s, %.1f engine cycles/step", result["match"], result["engine_cycles_per_step"])
    assert result["match"], f"RTL differs from golden: {mismatches[:10]}"
