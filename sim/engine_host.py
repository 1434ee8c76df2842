"""The host of the ZO engine, written once for both simulators: Amaranth's (quick loop) and cocotb's.

``HeadEngineHost`` performs the engine's host operations (load weights and a batch, run an operation,
read logits and weights) over a small adapter with ``set(port, int)``, ``get(port) -> int`` and
``await tick()`` (inputs set before a clock edge, outputs read after it). ``zo_training`` is the host
loop of the co-simulation: per step it loads a batch of real int8 embeddings, runs the +/-epsilon
passes, compares both logit sets with ``golden.engine.zo_engine.ZOEngine`` run in lockstep, computes the update
scale g with ``golden.zo.int8_head.update_scale`` from the RTL's logits, and runs the update; at the end it
reads back every weight and compares it with golden's. Mismatches are counted, not raised, so the
caller can report ``match``.
"""

from __future__ import annotations

import numpy as np

from pezo.golden.engine.int8 import requantize
from pezo.golden.engine.zo_engine import ZOEngine
from pezo.golden.zo.int8_head import Int8TrainConfig, update_scale
from pezo.hw.engine.pe_array import LOGIT_READ_LATENCY
from pezo.hw.engine.zo_engine import OP_FORWARD_ZO, OP_INFER, OP_UPDATE, W_READ_LATENCY
from pezo.sim.benches import pack
from pezo.sim.host_driver import HostDriver, to_signed

MAX_OP_CYCLES = HostDriver.max_op_cycles


class HeadEngineHost(HostDriver):
    """Host operations on a ``hw.engine.zo_engine.ZOEngine`` behind ``io`` (set / get / tick)."""

    weight_read_latency = W_READ_LATENCY

    async def read_weights(self) -> np.ndarray:
        """The weights [outputs, inputs]."""
        return (await self.read_weight_words()).reshape(self.config.outputs, self.config.inputs)

    async def load_batch(self, x) -> None:
        cfg, io = self.config, self.io
        x = np.asarray(x)
        io.set("x_we", 1)
        for b in range(cfg.array.batch):
            io.set("x_example", b)
            for j in range(cfg.words_per_output):
                io.set("x_word", j)
                io.set("x_wdata", pack(x[b, j * cfg.array.cols : (j + 1) * cfg.array.cols], 8))
                await io.tick()
        io.set("x_we", 0)

    async def run(self, op: int, g: int = 0) -> int:
        """Start ``op`` and wait for ``done``; return the engine's ``cycles`` (checked against the
        host's own count of busy cycles)."""
        return await self.run_op(op, g)

    async def read_logits(self, passes=(0, 1), shift: int | None = None) -> np.ndarray:
        """int32 logits [len(passes), batch, outputs] (with ``shift``: the requantised int8 ones)."""
        cfg, io = self.config, self.io
        out = np.zeros((len(passes), cfg.array.batch, cfg.outputs), dtype=np.int64)
        if shift is not None:
            io.set("requant_shift", shift)
        for i, s in enumerate(passes):
            io.set("logit_pass", s)
            for b in range(cfg.array.batch):
                io.set("logit_example", b)
                for o in range(cfg.outputs):
                    io.set("logit_output", o)
                    for _ in range(LOGIT_READ_LATENCY):
                        await io.tick()
                    out[i, b, o] = (
                        to_signed(io.get("logit_q"), 8) if shift is not None else to_signed(io.get("logit"), 32)
                    )
        return out


async def zo_training(
    io, train: Int8TrainConfig, xs, labels, act_exponent: int, weights=None, infer_shift: int = 6
) -> dict:
    """The co-simulation host loop over ``len(xs)`` ZO steps (module docstring). ``xs``: [steps, batch,
    inputs] int8, ``labels``: [steps, batch]. Returns match, steps, cycles per step (forward + update),
    mismatch details, and a final plain-inference check (int32 and requantised logits)."""
    cfg = train.engine
    driver = HeadEngineHost(io, cfg)
    model = ZOEngine(cfg, weights)
    if weights is not None:
        await driver.load_weights(model.weights)
    mismatches, forward_cycles, update_cycles, losses = [], [], [], []
    for step, (x, y) in enumerate(zip(xs, labels)):
        await driver.load_batch(x)
        forward_cycles.append(await driver.run(OP_FORWARD_ZO))
        got_plus, got_minus = await driver.read_logits()
        want_plus, want_minus = model.forward_zo(x)
        for name, got, want in (("logits+", got_plus, want_plus), ("logits-", got_minus, want_minus)):
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)[0]
                mismatches.append(
                    f"step {step} {name}[{bad[0]}, {bad[1]}]: rtl {got[tuple(bad)]}, golden {want[tuple(bad)]}"
                )
        g, loss_plus, loss_minus = update_scale(got_plus, got_minus, y, train, act_exponent)
        losses.append((loss_plus, loss_minus))
        update_cycles.append(await driver.run(OP_UPDATE, g))
        model.update(g)
    final = await driver.read_weights()
    weights_match = bool(np.array_equal(final, model.weights))
    if not weights_match:
        bad = np.argwhere(final != model.weights)[0]
        mismatches.append(
            f"final weight [{bad[0]}, {bad[1]}]: rtl {final[tuple(bad)]}, golden "
            f"{model.weights[tuple(bad)]} ({int((final != model.weights).sum())} differ)"
        )
    # plain inference of the last batch with the trained weights: int32 and requantised logits
    await driver.run(OP_INFER)
    logits = (await driver.read_logits(passes=(0,)))[0]
    logits_q = (await driver.read_logits(passes=(0,), shift=infer_shift))[0]
    want = model.infer(xs[-1])
    if not (np.array_equal(logits, want) and np.array_equal(logits_q, requantize(want, infer_shift))):
        mismatches.append("plain inference logits differ")
    cycles = [f + u for f, u in zip(forward_cycles, update_cycles)]
    return {
        "match": not mismatches,
        "steps": len(xs),
        "weights_match": weights_match,
        "mismatches": mismatches[:10],
        "mismatch_count": len(mismatches),
        "cycles_per_step": float(np.mean(cycles)),
        "cycles_per_step_max": int(max(cycles)),
        "forward_cycles": forward_cycles,
        "update_cycles": update_cycles,
        "losses": losses,
        "final_weights_nonzero": int(np.count_nonzero(final)),
        "final_weight_range": [int(final.min()), int(final.max())],
        "op_infer": OP_INFER,
    }
