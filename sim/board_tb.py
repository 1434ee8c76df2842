"""cocotb testbench of the engine top: ``pezo.driver.engine.EngineDriver`` over cocotbext-axi masters plays
the Zynq PS and runs a ZO training job through AXI; golden (``golden.engine.network.NetEngine``) checks
every step's losses, g and logits, the final weights and plain inference, bit for bit.

Also checked: the identification registers; SLVERR for an unmapped register, an address in no window,
a write to the logit window, a read of the x window, a WRAP burst; narrow write beats, FIXED reads,
reads and writes with R and B stalled by the master; a batch written while the engine runs lands in the
free bank (OKAY), one written while no bank is free is refused (SLVERR, STATUS.ERROR) and never
reaches a bank (the next inferences see the batches that were accepted), and weight accesses while it
runs are refused (SLVERR; the weights stay).

Environment: ``PEZO_NET`` (``NetConfig`` JSON), ``PEZO_LOSS`` (``LossConfig`` JSON; ``PEZO_EXPECT_LOSS``: what
golden is told, to prove a mismatch is caught), ``PEZO_ENGINE_DATA``
(npz: xs, labels, weights, optional biases_<layer>), ``PEZO_USE_IRQ`` (1: the driver waits on ``irq``, 0: it
polls STATUS), ``PEZO_RESULT``. The result JSON is written before
the test fails, so the caller can report ``match``.
"""

from __future__ import annotations

import itertools
import json
import os
import time

import cocotb
import numpy as np

from pezo.driver.engine import EngineDriver
from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.network import NetConfig, NetEngine
from pezo.golden.regs.engine import BoardMap
from pezo.golden.regs.stream import RESP_SLVERR
from pezo.sim.board_bus import CocotbBus
from pezo.sim.scoreboard import start_and_reset

UNMAPPED_REGISTER = 0xFFC


def _compare(mismatches: list, what: str, got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        if got.shape == want.shape and got.ndim:
            bad = tuple(np.argwhere(got != want)[0])
            mismatches.append(f"{what}: rtl {got[bad]} != golden {want[bad]} at {bad}")
        else:
            mismatches.append(f"{what}: rtl {got.tolist()} != golden {want.tolist()}")


async def _bus_errors(bus, bmap: BoardMap) -> dict:
    """Responses of accesses the map leaves unmapped or forbids (each must be SLVERR)."""
    free_slot = len(bmap.windows) * bmap.slot
    checks = {
        "unmapped_register_read": (await bus.read32(UNMAPPED_REGISTER))[1],
        "read_only_register_write": await bus.write32(bmap.register("STATUS"), 1),
        "unmapped_window_write": await bus.write_burst(free_slot, bytes(8)),
        "unmapped_window_read": (await bus.read_burst(free_slot + 8, 16))[1],
        "logit_window_write": await bus.write_burst(bmap.logit_offset(0, 0, 0), bytes(16)),
        "x_window_read": (await bus.read_burst(bmap.x_offset(0), 8))[1],
        "labels_past_batch": await bus.write_burst(bmap.label_offset(bmap.config.array.batch), bytes(8)),
    }
    return {name: resp == RESP_SLVERR for name, resp in checks.items()}


async def _protocol_checks(bus, driver: EngineDriver, flat) -> dict:
    """AXI4 corners on the weight window: narrow (4-byte) write beats, reads and writes with the master
    stalling R and B, a FIXED read burst, a WRAP burst (SLVERR). Leaves ``flat`` loaded."""
    from cocotbext.axi import AxiBurstType

    bmap, out = driver.map, {}
    base = bmap.window("weights").base
    other = (np.asarray(flat, dtype=np.int64)[::-1] // 2).astype(np.int8).tobytes()
    resp = (await bus.axi.write(base, other, size=2)).resp  # 4-byte beats
    out["narrow_write"] = int(resp) == 0 and bytes((await bus.read_burst(base, len(other)))[0]) == other
    pause = lambda: itertools.cycle([1, 0, 0, 1, 1, 0])  # noqa: E731
    bus.axi.read_if.r_channel.set_pause_generator(pause())
    bus.axi.write_if.b_channel.set_pause_generator(pause())
    await driver.load_weights(flat)
    out["stalled_read_write"] = np.array_equal(await driver.read_weights(), np.asarray(flat))
    for channel in (bus.axi.read_if.r_channel, bus.axi.write_if.b_channel):
        # cocotbext-axi's clear_pause_generator stops the generator but keeps its last value: a channel
        # left paused holds rready / bready low for good (the next burst would never finish)
        channel.clear_pause_generator()
        channel.pause = False
    got = await bus.axi.read(base, 16, burst=AxiBurstType.FIXED)
    out["fixed_read"] = (
        int(got.resp) == 0 and bytes(got.data) == bytes(np.asarray(flat[:8], dtype=np.int8).tobytes()) * 2
    )
    wrap = await bus.axi.write(base, bytes(16), burst=AxiBurstType.WRAP)
    out["wrap_slverr"] = int(wrap.resp) == RESP_SLVERR
    out["weights_intact"] = np.array_equal(await driver.read_weights(), np.asarray(flat))
    return out


async def _queue_checks(driver: EngineDriver, model: NetEngine, xs, labels, mismatches: list) -> dict:
    """While an inference runs on batch A: batch B goes to the free bank (OKAY), batch C finds no bank
    (SLVERR + ERROR); then the next inference sees B (not C) and, after C is written again, C."""
    a, b, c = (0, 1, 2) if len(xs) >= 3 else (0, 0, 0)
    assert await driver.write_batch(xs[a], labels[a]), "batch A refused with an empty queue"
    await driver.push()
    await driver.start("infer")
    busy_before = (await driver.status())["busy"]
    b_ok = await driver.write_batch(xs[b], labels[b])
    await driver.push()
    c_ok = await driver.write_batch(xs[c][::-1], labels[c])  # a different batch, refused
    base = driver.map.window("weights").base
    weights_busy = (
        await driver.bus.write_burst(base, bytes(8)) == RESP_SLVERR
        and (await driver.bus.read_burst(base, 8))[1] == RESP_SLVERR
    )
    status = await driver.status()
    busy_after = status["busy"]
    await driver.wait_done()
    bank = (await driver.status())["last_bank"]
    _compare(
        mismatches, "inference of batch A", (await driver.read_logits(bank, passes=(0,)))[0][0], model.infer(xs[a])
    )
    _compare(
        mismatches,
        "inference of batch B (written while the engine ran)",
        await driver.infer_queued(),
        model.infer(xs[b]),
    )
    error_set = status["error"]
    await driver.control("CLEAR_ERROR")
    error_cleared = not (await driver.status())["error"]
    _compare(
        mismatches,
        "inference of batch C (after the refused write)",
        await driver.infer(xs[c], labels[c]),
        model.infer(xs[c]),
    )
    _compare(mismatches, "weights after the refused write while busy", await driver.read_weights(), model.flat)
    return {
        "written_while_busy": bool(busy_before and busy_after),
        "free_bank_write_ok": bool(b_ok),
        "weights_refused_while_busy": bool(weights_busy),
        "full_queue_write_refused": not c_ok,
        "error_bit_set": bool(error_set),
        "error_bit_cleared": bool(error_cleared),
    }


@cocotb.test()
async def engine_top_trains_like_golden(dut):
    config = NetConfig.from_dict(json.loads(os.environ["PEZO_NET"]))
    loss = LossConfig(**json.loads(os.environ["PEZO_LOSS"]))  # what the driver runs
    expect = LossConfig(**json.loads(os.environ.get("PEZO_EXPECT_LOSS") or os.environ["PEZO_LOSS"]))  # golden
    with np.load(os.environ["PEZO_ENGINE_DATA"]) as f:
        xs, labels, weights = f["xs"], f["labels"], f["weights"]
        biases = [f[f"biases_{i}"] for i in range(len(config.layers))] if "biases_0" in f.files else None
    bmap = BoardMap(config)
    await start_and_reset(dut, cycles=4)
    started = time.perf_counter()
    bus = CocotbBus(dut)
    driver = EngineDriver(bus, bmap)
    mismatches: list[str] = []
    await driver.check_identity()
    errors = await _bus_errors(bus, bmap)
    for name, ok in errors.items():
        if not ok:
            mismatches.append(f"{name}: expected SLVERR")
    model = NetEngine(config, weights, biases)
    await driver.load_weights(model.flat)
    if biases is not None:
        await driver.load_biases(model.biases)
    _compare(mismatches, "weights read back", await driver.read_weights(), model.flat)
    protocol = await _protocol_checks(bus, driver, model.flat)
    for name, ok in protocol.items():
        if not ok:
            mismatches.append(f"AXI4 {name} failed")

    bus.busy = 0
    use_irq = os.environ.get("PEZO_USE_IRQ", "1") == "1"
    run = await driver.train(xs, labels, loss, read_logits=True, use_irq=use_irq)
    bus_cycles = bus.busy
    steps = len(xs)
    if len(run.steps) != steps:
        mismatches.append(f"the driver read {len(run.steps)} steps, expected {steps}")
    records, stale = [], 0
    for k, (x, y, got) in enumerate(zip(xs, labels, run.steps)):
        want = model.train_step(x, y, expect)
        records.append({"loss_plus": got.loss_plus, "loss_minus": got.loss_minus, "g": got.g})
        _compare(mismatches, f"step {k} loss+", got.loss_plus, want.loss_plus)
        _compare(mismatches, f"step {k} loss-", got.loss_minus, want.loss_minus)
        _compare(mismatches, f"step {k} g", got.g, want.g)
        if got.logits_intact:
            if want.logits_plus is not None:  # full BP runs one pass (the "minus" one)
                _compare(mismatches, f"step {k} logits+", got.logits[0], want.logits_plus)
            _compare(mismatches, f"step {k} logits-", got.logits[1], want.logits_minus)
        else:
            stale += 1
    final = await driver.read_weights()
    _compare(mismatches, "final weights", final, model.flat)
    queue = await _queue_checks(driver, model, xs, labels, mismatches)
    for name, ok in queue.items():
        if not ok:
            mismatches.append(f"batch queue: {name} failed")
    wall = run.end_time - run.start_time
    result = {
        "match": not mismatches,
        "mismatches": mismatches[:10],
        "mismatch_count": len(mismatches),
        "steps": steps,
        "cycles_per_step": wall / steps,
        "bus_cycles_per_step": bus_cycles / steps,
        "engine_cycles_per_step": run.engine_cycles / steps,
        "wait_cycles": run.wait_cycles,
        "logit_steps_checked": steps - stale,
        "records": records,
        "slverr": errors,
        "queue": queue,
        "protocol": protocol,
        "final_weights_nonzero": int(np.count_nonzero(final)),
        "test_seconds": time.perf_counter() - started,
        "bus_transfers": bus.transfers,
        "use_irq": use_irq,
    }
    with open(os.environ["PEZO_RESULT"], "w") as f:
        json.dump(result, f, indent=2)
    dut._log.info("engine top: match %s, %.1f cycles/step", result["match"], result["cycles_per_step"])
    assert result["match"], f"RTL differs from golden: {mismatches[:10]}"
