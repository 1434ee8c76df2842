"""The driver of the engine top: a ZO training job (load weights and biases, keep the batch queue filled,
TRAIN, read each step's losses, g and logits, read back the trained weights, infer).

Written once against a bus with async methods (``Bus``; byte addresses relative to each port's base):

* ``read32(addr) -> (value, resp)`` and ``write32(addr, value) -> resp`` on the AXI4-Lite registers;
* ``write_burst(addr, data: bytes) -> resp`` and ``read_burst(addr, n) -> (bytes, resp)`` on the AXI4
  windows (8-byte aligned; a transport may split them into bursts);
* optional ``irq`` (True: ``wait_irq()`` returns when the ``irq`` line is high) and ``now()`` (a clock: cycles in
  simulation, seconds on the board) for the figures.

``resp`` is 0 (OKAY) or 2 (SLVERR); the driver raises ``BusError`` on an unexpected SLVERR. The
simulation transport is ``pezo.sim.board_bus.CocotbBus`` (cocotbext-axi masters), the board's
``pezo.driver.mmap_bus.MmapBus`` (/dev/mem or UIO; trivial async methods, run with ``asyncio.run``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pezo.golden.engine.loss import G_MODE_CODES, LossConfig
from pezo.golden.engine.network import batch_words
from pezo.golden.engine.zo_engine import G_BITS
from pezo.golden.regs.engine import (
    BEAT_BYTES,
    CONTROL_BITS,
    ENGINE_MAP_VERSION,
    IRQ_BITS,
    KIND_SHIFT,
    OPS,
    STATUS_BITS,
    STEP_LOG_DEPTH,
    STEP_RECORD_ENTRIES,
    BoardMap,
    describe_kinds,
)
from pezo.golden.regs.stream import HOST_ID, RESP_OKAY

MAX_POLLS = 1 << 20


class BusError(RuntimeError):
    """An access the engine top answered with SLVERR (or a transport failure)."""


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


@dataclass
class StepResult:
    """One TRAIN step as the host read it: losses, g, the logit bank and (optionally) both logit sets
    [2, batch, outputs] int32."""

    loss_plus: int
    loss_minus: int
    g: int
    bank: int
    logits: np.ndarray | None = None
    logits_intact: bool = True


@dataclass
class TrainResult:
    steps: list = field(default_factory=list)
    start_time: float = 0.0
    end_time: float = 0.0
    engine_cycles: int = 0
    wait_cycles: int = 0
    refused_writes: int = 0


class EngineDriver:
    """Host operations on the engine top of ``bmap`` behind ``bus`` (module docstring)."""

    def __init__(self, bus, bmap: BoardMap):
        if not isinstance(bmap, BoardMap):
            raise ValueError(f"bmap must be a BoardMap, got {type(bmap).__name__}")
        self.bus, self.map, self.config = bus, bmap, bmap.config
        self.reg = {r.name: r.offset for r in bmap.registers}

    # -- registers ------------------------------------------------------------------------------
    async def read(self, name: str) -> int:
        value, resp = await self.bus.read32(self.reg[name])
        if resp != RESP_OKAY:
            raise BusError(f"reading register {name} answered SLVERR")
        return value

    async def write(self, name: str, value: int) -> None:
        if await self.bus.write32(self.reg[name], int(value) & 0xFFFFFFFF) != RESP_OKAY:
            raise BusError(f"writing register {name} answered SLVERR")

    async def control(self, *bits: str) -> None:
        await self.write("CONTROL", sum(1 << CONTROL_BITS[b] for b in bits))

    async def status(self) -> dict:
        word = await self.read("STATUS")
        out = {name.lower(): word >> bit & 1 for name, bit in STATUS_BITS.items()}
        out["queued"] = word >> STATUS_BITS["QUEUED"] & 3
        return out

    async def check_identity(self) -> None:
        """The bitstream behind the bus is an engine top of this map (ID, VERSION, SHAPE, BATCH)."""
        got = {n: await self.read(n) for n in ("ID", "VERSION", "SHAPE", "BATCH")}
        want = {
            "ID": HOST_ID,
            "VERSION": ENGINE_MAP_VERSION,
            "SHAPE": self.map.shape_word(),
            "BATCH": self.map.batch_word(),
        }
        wrong = [n for n in want if got[n] != want[n]]
        diff = got["SHAPE"] ^ want["SHAPE"]
        if wrong == ["SHAPE"] and not diff & ((1 << KIND_SHIFT) - 1):  # the same shape, other layer kinds
            raise BusError(
                f"the device's layer kinds differ from the configuration's: its SHAPE {got['SHAPE']:#x} says "
                f"{describe_kinds(got['SHAPE'])}, the config ({self.map.config.name}) has "
                f"{describe_kinds(want['SHAPE'])} (load the bitstream built for this config.json)"
            )
        bad = [f"{n} {got[n]:#x} (expected {want[n]:#x})" for n in wrong]
        if bad:
            raise BusError("the device is not the engine top of this configuration: " + ", ".join(bad))

    # -- windows --------------------------------------------------------------------------------
    async def _write(self, window: str, addr: int, data: bytes) -> int:
        """A burst into ``window`` (named for the reader of a failing trace)."""
        return await self.bus.write_burst(addr, bytes(data))

    async def load_weights(self, flat) -> None:
        """Global-order int8 weights (``golden.engine.network``); the engine must be idle."""
        flat = np.asarray(flat, dtype=np.int64).ravel()
        if flat.size != self.config.weights:
            raise ValueError(f"weights must hold {self.config.weights} values, got {flat.size}")
        if await self._write("weights", self.map.window("weights").base, flat.astype(np.int8).tobytes()) != RESP_OKAY:
            raise BusError("loading the weights answered SLVERR (is the engine busy?)")

    async def read_weights(self) -> np.ndarray:
        data, resp = await self.bus.read_burst(self.map.window("weights").base, self.config.weights)
        if resp != RESP_OKAY:
            raise BusError("reading the weights answered SLVERR (is the engine busy?)")
        return np.frombuffer(bytes(data), dtype=np.int8).astype(np.int64)

    async def load_biases(self, biases) -> None:
        """Per-layer int32 biases (None for a layer without one; a conv layer's one per output channel), written as
        consecutive entries of the biases window."""
        values = np.concatenate(
            [
                np.zeros(l.bias_size, dtype=np.int64) if b is None else np.asarray(b, dtype=np.int64)
                for l, b in zip(self.config.layers, biases)
            ]
        )
        entries = values.astype(np.int64) & 0xFFFFFFFF
        if await self._write("biases", self.map.window("biases").base, entries.astype("<u8").tobytes()) != RESP_OKAY:
            raise BusError("loading the biases answered SLVERR (is the engine busy, does the net have biases?)")

    async def write_batch(self, x, labels) -> bool:
        """Write one batch (x [batch, inputs] int8, the network's input; labels [batch]) into the free bank as the
        batch memory holds it (``golden.engine.network.batch_words``: a conv layer 0's im2col'd patches); False
        (and nothing pushed) when the engine refused it (no free bank: SLVERR, STATUS.ERROR)."""
        cfg, bmap = self.config, self.map
        x = np.asarray(x, dtype=np.int64)
        if x.shape != (cfg.array.batch, cfg.inputs):
            raise ValueError(f"x must have shape {(cfg.array.batch, cfg.inputs)}, got {x.shape}")
        n = bmap.x_bytes
        rows = np.zeros((cfg.array.batch, bmap.x_stride), dtype=np.int8)
        rows[:, :n] = batch_words(cfg, x)
        ok = True
        if bmap.x_stride == n:  # one burst for the whole batch
            ok &= await self._write("x", bmap.x_offset(0), rows.tobytes()) == RESP_OKAY
        else:
            for b in range(cfg.array.batch):
                ok &= await self._write("x", bmap.x_offset(b), rows[b, :n].tobytes()) == RESP_OKAY
        entries = np.asarray(labels, dtype=np.int64).astype("<u8")
        ok &= await self._write("labels", bmap.label_offset(0), entries.tobytes()) == RESP_OKAY
        return bool(ok)

    async def push(self) -> None:
        await self.control("PUSH")

    async def read_step(self, k: int) -> StepResult:
        """The step log record of the k-th step (0-based) of the current/last TRAIN."""
        data, resp = await self.bus.read_burst(self.map.step_offset(k), STEP_RECORD_ENTRIES * BEAT_BYTES)
        if resp != RESP_OKAY:
            raise BusError(f"reading step record {k} answered SLVERR")
        words = np.frombuffer(bytes(data), dtype="<u8")
        return StepResult(int(words[0]), int(words[1]), _signed(int(words[2]), 64), int(words[3]) & 1)

    async def read_logits(self, bank: int, passes=(0, 1)) -> tuple[np.ndarray, np.ndarray]:
        """int32 logits and their requantisation [len(passes), batch, outputs] of logit bank ``bank``: one
        burst per pass (the rows with their padding)."""
        cfg, bmap = self.config, self.map
        logits = np.zeros((len(passes), cfg.array.batch, cfg.outputs), dtype=np.int64)
        quant = np.zeros_like(logits)
        for i, s in enumerate(passes):
            n = cfg.array.batch * bmap.output_stride * BEAT_BYTES
            data, resp = await self.bus.read_burst(bmap.logit_offset(bank, s, 0), n)
            if resp != RESP_OKAY:
                raise BusError(f"reading the logits of bank {bank} pass {s} answered SLVERR")
            words = np.frombuffer(bytes(data), dtype="<i4").reshape(cfg.array.batch, bmap.output_stride, 2)
            logits[i], quant[i] = words[:, : cfg.outputs, 0], words[:, : cfg.outputs, 1]
        return logits, quant

    # -- operations -----------------------------------------------------------------------------
    async def start(self, op: str, steps: int = 1, loss: LossConfig | None = None, g: int = 0) -> None:
        """Write ``op``'s registers and START it. A split this net does not allow (outside 0..L, where the engine
        would run full ZO; a conv layer in the tail; any tail without one) is refused before any write."""
        if op not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}, got {op!r}")
        loss = loss or LossConfig()
        layers = len(self.map.config.layers)
        split = self.map.config.split_c(loss.split)  # the engine runs a SPLIT above L as full ZO: refused here
        if split != layers and not self.map.config.backprop:
            raise ValueError(f"split {loss.split} needs an engine with the backprop tail (SHAPE bit 25 is 0)")
        await self.write("OP", OPS[op])
        await self.write("STEPS", steps)
        await self.write("G", g & ((1 << G_BITS) - 1))
        await self.write("G_MODE", G_MODE_CODES[loss.mode] if op == "train" else 0)
        await self.write("MARGIN", loss.margin)
        await self.write("G_LR", loss.g_lr)
        await self.write("G_SHIFT", loss.g_shift)
        await self.write("WD_SHIFT", loss.wd_shift)
        await self.write("WD_EVERY", loss.wd_every)
        if self.map.config.backprop:  # the partition (full ZO unless the loss names one) and b_BP
            await self.write("SPLIT", split)
            await self.write("BP_BITS", loss.bp_bits)
        await self.control("START", "ACK_DONE", "ACK_STEP")

    async def wait_done(self) -> None:
        for _ in range(MAX_POLLS):
            if (await self.status())["done"]:
                return
        raise BusError(f"the engine did not finish ({MAX_POLLS} status polls)")

    async def run(self, op: str, **kwargs) -> None:
        await self.start(op, **kwargs)
        await self.wait_done()

    async def infer(self, x, labels) -> np.ndarray:
        """Plain inference of one batch: logits [batch, outputs] (the batch goes through the queue)."""
        if not await self.write_batch(x, labels):
            raise BusError("the batch for inference was refused (the queue is full)")
        await self.push()
        return await self.infer_queued()

    async def infer_queued(self) -> np.ndarray:
        """Plain inference of the batch at the head of the queue: logits [batch, outputs]."""
        await self.run("infer")
        bank = (await self.status())["last_bank"]
        return (await self.read_logits(bank, passes=(0,)))[0][0]

    async def train(
        self, xs, labels, loss: LossConfig, read_logits: bool = True, use_irq: bool | None = None, clock=None
    ) -> TrainResult:
        """``len(xs)`` ZO steps of OP_TRAIN with the on-chip loss ``loss``: fill both banks, start, then
        per finished step read its record (and its logits while the next step runs) and refill the
        queue, until DONE. ``use_irq``: wait on ``bus.wait_irq`` (STEP and DONE interrupts) instead of
        polling STATUS (default: ``bus.irq``). Times (``clock``, default ``bus.now``) run from the first
        batch write to the last step's record (and logits) read."""
        if not loss.on_chip:
            raise ValueError("train runs the on-chip loss (loss.mode sign or scaled); host mode: forward_zo + update")
        steps = len(xs)
        if not 1 <= steps < 1 << 16:
            raise ValueError(f"steps must be in 1..65535, got {steps}")
        use_irq = bool(getattr(self.bus, "irq", False)) if use_irq is None else use_irq
        clock = clock or getattr(self.bus, "now", None)
        result = TrainResult(start_time=clock() if clock else 0.0)
        loaded = 0
        while loaded < min(2, steps):  # both banks
            if not await self.write_batch(xs[loaded], labels[loaded]):
                raise BusError("a batch was refused before training (is another job running?)")
            await self.push()
            loaded += 1
        await self.write("IRQ_ENABLE", (1 << IRQ_BITS["STEP"] | 1 << IRQ_BITS["DONE"]) if use_irq else 0)
        await self.start("train", steps=steps, loss=loss)
        seen = 0
        for _ in range(MAX_POLLS):
            if use_irq:
                await self.bus.wait_irq()
                await self.control("ACK_STEP", "ACK_DONE")
            status = await self.status()
            done_steps = await self.read("STEPS_DONE")
            if done_steps - seen > STEP_LOG_DEPTH:
                raise BusError(f"the host fell {done_steps - seen} steps behind (the step log holds {STEP_LOG_DEPTH})")
            while seen < done_steps:
                record = await self.read_step(seen)
                if read_logits:
                    record.logits = (await self.read_logits(record.bank))[0]
                    record.logits_intact = await self.read("STEPS_DONE") <= seen + 1  # step seen+2 not begun
                result.steps.append(record)
                seen += 1
                while loaded < steps and (await self.status())["load_ready"]:
                    if not await self.write_batch(xs[loaded], labels[loaded]):
                        result.refused_writes += 1
                        break
                    await self.push()
                    loaded += 1
            if status["done"] and seen == steps:
                break
            if not status["busy"] and not status["done"]:
                raise BusError("the engine stopped without DONE")
        else:
            raise BusError(f"training did not finish ({MAX_POLLS} polls)")
        result.end_time = clock() if clock else 0.0
        result.engine_cycles = await self.read("CYCLES")
        result.wait_cycles = await self.read("WAIT_CYCLES")
        await self.write("IRQ_ENABLE", 0)
        return result
