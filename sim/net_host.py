"""The host of the network engine, written once for Amaranth's simulator, cocotb (Icarus, Verilator) and,
through the same register names, the board.

``NetDriver`` moves one clock at a time over an adapter with ``set(port, int)``, ``get(port) -> int``,
``await tick()`` and ``await wait_any(ports, limit)``. Every cycle it does what a host does alongside the
engine: keeps the batch queue filled (one input word or label per cycle into ``load_bank`` while
``load_ready``, then ``push``), notes each ``step_done`` (the step's losses and g) and reads that step's
logits from the logit bank the engine just finished with, while the next step runs. While an operation
runs and none of that is due, it lets the simulator run free until ``step_done``, ``done`` or (a batch
waiting) ``load_ready`` rises (``wait_any``): the same cycles, without a Python round trip per cycle.
``net_training`` is the co-simulation: S steps of ``OP_TRAIN`` (on-chip loss and g) or, in host mode,
``OP_FORWARD_ZO`` + the host's g + ``OP_UPDATE``, with ``golden.engine.network.NetEngine`` in lockstep:
every logit of every pass, every loss and g, the final weights and a plain inference must be equal.
Mismatches are collected, not raised.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from pezo.golden.engine.loss import G_MODE_CODES, LossConfig, hinge_loss, onchip_g
from pezo.golden.engine.network import NetConfig, NetEngine, batch_words, weights_digest
from pezo.golden.engine.zo_engine import G_BITS
from pezo.hw.engine.net_engine import OP_FORWARD_ZO, OP_INFER, OP_TRAIN, OP_UPDATE, W_READ_LATENCY
from pezo.hw.engine.pe_array import LOGIT_READ_LATENCY
from pezo.sim.benches import pack
from pezo.sim.host_driver import HostDriver, to_signed

MAX_WAIT_CYCLES = 1 << 26
"""A TRAIN(S) operation fails when ``done`` stays 0 this long (a hang guard: rt-mlp full BP at batch 256 takes
~300 000 cycles a step)."""


class NetDriver(HostDriver):
    """Host operations on a ``hw.engine.net_engine.NetEngine`` behind ``io`` (module docstring)."""

    max_op_cycles = MAX_WAIT_CYCLES
    weight_read_latency = W_READ_LATENCY

    def __init__(self, io, config: NetConfig):
        super().__init__(io, config)
        self.batches: deque = deque()  # (x, labels) still to load
        self.load_items: list = []  # the batch being loaded: ("x", example, word, data) / ("y", example, label)
        self.pushes = 0
        self.steps: list[dict] = []  # per finished step: losses, g, logit bank
        self.reads: deque = deque()  # (where, bank, pass, example, output) still to read
        self.inflight: deque = deque([None] * (LOGIT_READ_LATENCY - 1))  # reads whose data is on its way
        self.in_flight = 0  # reads in ``inflight``
        self.strobed = False  # a load strobe (x_we, y_we, push) set this cycle
        self.ticks = 0

    # -- idle-time operations ---------------------------------------------------------------------
    async def read_weights(self) -> np.ndarray:
        """The weights in global order (flat)."""
        return (await self.read_weight_words()).ravel()

    async def load_biases(self, biases) -> None:
        io, index = self.io, 0
        io.set("b_we", 1)
        for _layer, bias in zip(self.config.layers, biases):
            for value in np.asarray(bias, dtype=np.int64):
                io.set("b_addr", index)
                io.set("b_wdata", int(value) & 0xFFFFFFFF)
                index += 1
                await self.tick()
        io.set("b_we", 0)

    # -- the per-cycle host -------------------------------------------------------------------------
    def queue_batch(self, x, labels) -> None:
        self.batches.append((np.asarray(x), np.asarray(labels)))

    def _next_load_items(self) -> None:
        x, labels = self.batches.popleft()
        cfg, items = self.config, []
        x = batch_words(cfg, x)
        for b in range(cfg.array.batch):
            for j in range(cfg.input_words):
                items.append(("x", b, j, pack(x[b, j * cfg.array.cols : (j + 1) * cfg.array.cols], 8)))
            items.append(("y", b, int(labels[b])))
        items.append(("push",))
        self.load_items = items[::-1]

    def _release_strobes(self) -> None:
        if self.strobed:
            for name in ("x_we", "y_we", "push"):
                self.io.set(name, 0)
            self.strobed = False

    def _service(self) -> None:
        """Inputs for this cycle (outputs already sampled after the last edge)."""
        io = self.io
        self._release_strobes()
        if not self.load_items and self.batches:
            self._next_load_items()
        if self.load_items and io.get("load_ready"):
            item = self.load_items.pop()
            self.strobed = True
            if item[0] == "x":
                io.set("x_example", item[1])
                io.set("x_word", item[2])
                io.set("x_wdata", item[3])
                io.set("x_we", 1)
            elif item[0] == "y":
                io.set("y_example", item[1])
                io.set("y_label", item[2])
                io.set("y_we", 1)
            else:
                io.set("push", 1)
                self.pushes += 1
        read = self.reads.popleft() if self.reads else None
        if read is not None:
            _, bank, s, b, o = read
            io.set("logit_bank", bank)
            io.set("logit_pass", s)
            io.set("logit_example", b)
            io.set("logit_output", o)
            self.in_flight += 1
        self.inflight.append(read)

    def _observe(self) -> None:
        """Outputs after the edge: the data of the logit read issued ``LOGIT_READ_LATENCY`` cycles ago, a
        finished step."""
        io = self.io
        read = self.inflight.popleft()
        if read is not None:
            self.in_flight -= 1
            target, _, s, b, o = read
            target[s, b, o] = to_signed(io.get("logit"), 32)
        if io.get("step_done"):
            self._step_finished()

    def _step_finished(self) -> None:
        io, cfg = self.io, self.config
        self.steps.append(
            {
                "loss_plus": io.get("loss_plus"),
                "loss_minus": io.get("loss_minus"),
                "g": to_signed(io.get("g_used"), G_BITS),
                "bank": io.get("last_bank"),
                "logits": np.zeros((2, cfg.array.batch, cfg.outputs), dtype=np.int64),
            }
        )
        record = self.steps[-1]
        self.reads.extend(
            (record["logits"], record["bank"], s, b, o)
            for s in (0, 1)
            for b in range(cfg.array.batch)
            for o in range(cfg.outputs)
        )

    async def tick(self) -> None:
        self._service()
        await self.io.tick()
        self.ticks += 1
        self._observe()

    def _idle(self) -> bool:
        """Nothing for the host to do this cycle: no logit read pending or on its way, no batch item the
        queue would take now."""
        if self.reads or self.in_flight:
            return False
        if not self.load_items and self.batches:
            self._next_load_items()
        return not (self.load_items and self.io.get("load_ready"))

    async def advance(self, until: tuple[str, ...], limit: int) -> int:
        """One serviced ``tick`` while the host has work; when idle, let the engine run free until
        ``step_done``, one of ``until`` or (a batch waiting) ``load_ready`` reads 1 -- the cycles in between
        would only have polled them."""
        if not self._idle():
            await self.tick()
            return 1
        self._release_strobes()
        watch = ("step_done", *until) + (("load_ready",) if self.load_items else ())
        cycles = await self.io.wait_any(watch, limit)
        self.ticks += cycles
        if self.io.get("step_done"):
            self._step_finished()
        return cycles

    async def run(self, op: int, steps: int = 1, g: int = 0, loss: LossConfig | None = None) -> int:
        """Start ``op``; service the host every cycle until ``done``. Returns the engine's busy cycles."""
        loss = loss or LossConfig()
        tail = {}
        if self.config.backprop:  # the partition (full ZO where the loss names none) and b_BP
            layers = len(self.config.layers)
            tail = {"split": layers if loss.split is None else loss.split, "bp_bits": loss.bp_bits}
        return await self.run_op(
            op,
            g,
            steps=steps,
            g_mode=G_MODE_CODES[loss.mode],
            margin=loss.margin,
            g_lr=loss.g_lr,
            g_shift=loss.g_shift,
            wd_shift=loss.wd_shift,
            wd_every=loss.wd_every,
            **tail,
        )

    async def drain_reads(self) -> None:
        while self.reads or self.in_flight:
            await self.tick()

    async def read_logits(self, bank: int, passes=(0, 1)) -> np.ndarray:
        """int32 logits [len(passes), batch, outputs] of logit bank ``bank`` (pipelined, one a cycle)."""
        cfg = self.config
        out = np.zeros((2, cfg.array.batch, cfg.outputs), dtype=np.int64)
        self.reads.extend(
            (out, bank, s, b, o) for s in passes for b in range(cfg.array.batch) for o in range(cfg.outputs)
        )
        await self.drain_reads()
        return out[list(passes)]


def host_g(logits_plus, logits_minus, labels, loss: LossConfig) -> int:
    """The host-mode g of the co-simulation: the host computes from the RTL's logits what the chip's sign
    mode would (any host g is fine for the bit-exact check: golden is given the same g)."""
    sign = loss if loss.mode != "host" else LossConfig(mode="sign", margin=loss.margin, g_lr=loss.g_lr)
    return onchip_g(hinge_loss(logits_plus, labels, loss.margin), hinge_loss(logits_minus, labels, loss.margin), sign)


def _compare(mismatches: list, what: str, got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if not np.array_equal(got, want):
        bad = tuple(np.argwhere(got != want)[0]) if got.shape == want.shape and got.ndim else ()
        detail = f"{got[bad]} != golden {want[bad]} at {bad}" if bad else f"{got} != golden {want}"
        mismatches.append(f"{what}: rtl {detail}")


async def net_training(
    io, config: NetConfig, loss: LossConfig, xs, labels, weights, biases=None, overlap: bool = True, g_of=None
) -> dict:
    """The co-simulation host loop over ``len(xs)`` steps (module docstring). ``overlap``: batches are
    loaded while the engine computes (the double-buffered queue) -- otherwise each batch is loaded after
    the previous step, with the engine idle. ``g_of(logits_plus, logits_minus, labels) -> int``: the host's
    g in host mode (default ``host_g``). Returns match, mismatches, cycles and step records."""
    driver = NetDriver(io, config)
    model = NetEngine(config, weights, biases)
    await driver.load_weights(model.flat)
    if biases is not None:
        await driver.load_biases(model.biases)
    mismatches, records = [], []
    steps, train_wait, bp_cycles = len(xs), None, None
    started = driver.ticks
    busy = 0
    if loss.on_chip and overlap:
        for x, y in zip(xs, labels):
            driver.queue_batch(x, y)
        while driver.pushes < 1:  # the first batch, then train while the queue is kept filled
            await driver.tick()
        busy = await driver.run(OP_TRAIN, steps=steps, loss=loss)
        train_wait = io.get("wait_cycles")
        if config.backprop:
            bp_cycles = io.get("bp_cycles")
    elif loss.on_chip:
        for x, y in zip(xs, labels):
            driver.queue_batch(x, y)
            while driver.batches or driver.load_items:
                await driver.tick()
            busy += await driver.run(OP_TRAIN, steps=1, loss=loss)
            if config.backprop:
                bp_cycles = (bp_cycles or 0) + io.get("bp_cycles")
    else:
        for x, y in zip(xs, labels):
            driver.queue_batch(x, y)
            while driver.batches or driver.load_items:
                await driver.tick()
            busy += await driver.run(OP_FORWARD_ZO, loss=loss)
            bank = io.get("last_bank")
            plus, minus = await driver.read_logits(bank)
            g = g_of(plus, minus, y) if g_of else host_g(plus, minus, y, loss)
            busy += await driver.run(OP_UPDATE, g=g, loss=loss)
            driver.steps.append(
                {
                    "loss_plus": io.get("loss_plus"),
                    "loss_minus": io.get("loss_minus"),
                    "g": g,
                    "bank": bank,
                    "logits": np.stack([plus, minus]),
                }
            )
    wall = driver.ticks - started
    await driver.drain_reads()
    if len(driver.steps) != steps:
        mismatches.append(f"the engine reported {len(driver.steps)} finished steps, expected {steps}")
    for step, (x, y, got) in enumerate(zip(xs, labels, driver.steps)):
        want = model.train_step(x, y, loss, g=got["g"] if loss.mode == "host" else None)
        records.append({"loss_plus": got["loss_plus"], "loss_minus": got["loss_minus"], "g": got["g"]})
        if want.logits_plus is not None:  # full BP runs one pass (the "minus" one)
            _compare(mismatches, f"step {step} logits+", got["logits"][0], want.logits_plus)
        _compare(mismatches, f"step {step} logits-", got["logits"][1], want.logits_minus)
        _compare(mismatches, f"step {step} loss+", got["loss_plus"], want.loss_plus)
        _compare(mismatches, f"step {step} loss-", got["loss_minus"], want.loss_minus)
        _compare(mismatches, f"step {step} g", got["g"], want.g)
    final = await driver.read_weights()
    _compare(mismatches, "final weights", final, model.flat)
    # plain inference of the last batch with the trained weights
    driver.queue_batch(xs[-1], labels[-1])
    while driver.batches or driver.load_items:
        await driver.tick()
    await driver.run(OP_INFER, loss=loss)
    inferred = (await driver.read_logits(io.get("last_bank"), passes=(0,)))[0]
    _compare(mismatches, "plain inference logits", inferred, model.infer(xs[-1]))
    return {
        "match": not mismatches,
        "mismatches": mismatches[:10],
        "mismatch_count": len(mismatches),
        "steps": steps,
        "wall_cycles": wall,
        "busy_cycles": busy,
        "cycles_per_step": wall / steps,
        "busy_cycles_per_step": busy / steps,
        "records": records,
        "final_weights_nonzero": int(np.count_nonzero(final)),
        "final_weight_range": [int(final.min()), int(final.max())],
        "final_weight_digest": weights_digest(final),
        "overlap": overlap,
        "wait_cycles": train_wait,
        "load_hidden": train_wait == 0,
        "bp_cycles_per_step": None if bp_cycles is None else bp_cycles / steps,
    }
