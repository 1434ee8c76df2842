"""Training from the ULX3S trainer's on-chip data memory (``hw.feeder``, ``golden.regs.uart_link``): the host loads
the training set once, then each TRAIN(S) runs S steps on batches the feeder copies from it -- the host only
starts the job, waits for DONE and reads the step log and the weights.

Batch k of a job started at example ``start`` holds ``golden.regs.uart_link.feed_indices(start, examples, batch,
steps)[k]``; ``golden_order`` gives those batches so golden can run the same steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pezo.driver.engine import BusError, EngineDriver
from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.network import batch_words
from pezo.golden.regs.engine import STEP_LOG_DEPTH
from pezo.golden.regs.uart_link import FEED_CONTROL_BITS, bytes_to_words, feed_indices, feeder_register, region_base

MAX_POLLS = 1 << 20


@dataclass
class OnChipResult:
    """``steps``: the step records read after DONE (the last ``STEP_LOG_DEPTH`` at most), the first of them
    being step ``first_step``; the engine's busy and wait cycles; the batches the feeder pushed."""

    steps: list = field(default_factory=list)
    first_step: int = 0
    engine_cycles: int = 0
    wait_cycles: int = 0
    pushed: int = 0
    polls: int = 0


def golden_order(xs, labels, start: int, batch: int, steps: int):
    """(x [steps, batch, inputs], labels [steps, batch]) of the batches the feeder pushes."""
    order = feed_indices(start, len(xs), batch, steps)
    return np.asarray(xs)[order], np.asarray(labels)[order]


class OnChipTrainer:
    """``driver`` over a ``pezo.driver.uart_bus.UartBus`` (its ``bus``)."""

    def __init__(self, driver: EngineDriver):
        self.driver, self.bus, self.config = driver, driver.bus, driver.config

    async def feeder_read(self, name: str) -> int:
        return (await self.bus.read_words(feeder_register(name), 1))[0]

    async def feeder_write(self, name: str, value: int) -> None:
        await self.bus.write_words(feeder_register(name), [value])

    async def load(self, xs, labels) -> int:
        """Write the training set (x [n, inputs] int8, labels [n]) into the data memory as the x window takes it
        (``golden.engine.network.batch_words``: a conv layer 0's im2col'd patches, ``BoardMap.x_bytes`` per
        example); returns n."""
        xs, labels = np.asarray(xs, dtype=np.int64), np.asarray(labels, dtype=np.int64)
        cfg, stride = self.config, self.driver.map.x_stride
        capacity = await self.feeder_read("FEED_CAPACITY")
        if xs.ndim != 2 or xs.shape[1] != cfg.inputs or len(labels) != len(xs):
            raise ValueError(f"xs must have shape (n, {cfg.inputs}), labels n entries; got {xs.shape} {labels.shape}")
        if not cfg.array.batch <= len(xs) <= capacity:
            raise ValueError(f"the training set must hold {cfg.array.batch}..{capacity} examples, got {len(xs)}")
        rows = np.zeros((len(xs), stride), dtype=np.int8)
        rows[:, : self.driver.map.x_bytes] = batch_words(cfg, xs)
        await self.bus.write_words(region_base("data_x"), bytes_to_words(rows.tobytes()))
        padded = np.zeros(-(-len(xs) // 8) * 8, dtype=np.uint8)
        padded[: len(xs)] = labels
        await self.bus.write_words(region_base("data_labels"), bytes_to_words(padded.tobytes()))
        await self.feeder_write("FEED_EXAMPLES", len(xs))
        return len(xs)

    async def train(self, steps: int, loss: LossConfig, start: int = 0) -> OnChipResult:
        """``steps`` ZO steps of TRAIN on batches the feeder pushes from example ``start`` on (the first two pushed
        before TRAIN starts)."""
        if not 1 <= steps < 1 << 16:
            raise ValueError(f"steps must be in 1..65535, got {steps}")
        if not loss.on_chip:
            raise ValueError("on-chip training runs the on-chip loss (loss.mode sign or scaled)")
        drv = self.driver
        await self.feeder_write("FEED_START", start)
        await self.feeder_write("FEED_BATCHES", steps)
        await self.feeder_write("FEED_CONTROL", 1 << FEED_CONTROL_BITS["GO"])
        for _ in range(MAX_POLLS):  # both banks filled before the start: WAIT_CYCLES then counts only a slow feeder
            if await self.feeder_read("FEED_PUSHED") >= min(2, steps):
                break
        else:
            raise BusError(f"the feeder pushed no batch ({MAX_POLLS} polls; is the engine idle?)")
        await drv.start("train", steps=steps, loss=loss)
        result = OnChipResult()
        for result.polls in range(1, MAX_POLLS + 1):
            status = await drv.status()
            if status["done"]:
                break
            if not status["busy"]:
                raise BusError("the engine stopped without DONE")
        else:
            raise BusError(f"training did not finish ({MAX_POLLS} polls)")
        result.first_step = max(0, steps - STEP_LOG_DEPTH)
        result.steps = [await drv.read_step(k) for k in range(result.first_step, steps)]
        result.engine_cycles = await drv.read("CYCLES")
        result.wait_cycles = await drv.read("WAIT_CYCLES")
        result.pushed = await self.feeder_read("FEED_PUSHED")
        return result
