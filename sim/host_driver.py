"""What the hosts of both engines share (``sim.engine_host`` for the head engine, ``sim.net_host`` for the
network engine): ``HostDriver``, the weight-port loads and reads and the start-and-wait of an operation over
an adapter with ``set(port, int)``, ``get(port) -> int`` and ``await tick()`` (inputs set before a clock
edge, outputs read after it; ``sim.amaranth_sim.AmaranthIO``, ``sim.cocotb_io.CocotbIO``; their
``wait_any(ports, limit)`` ticks until one of the outputs reads 1, for hosts that skip idle cycles).
"""

from __future__ import annotations

import numpy as np

from pezo.golden.engine.zo_engine import G_BITS
from pezo.sim.benches import pack, unpack


def to_signed(value: int, bits: int) -> int:
    """The low ``bits`` of ``value`` as a two's complement integer (``unpack``'s lane 0, without its list)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class HostDriver:
    """Host operations common to both engines behind ``io``; ``config`` has ``weight_words`` and ``cols``.
    Every cycle goes through ``tick`` (a subclass may do per-cycle host work there)."""

    max_op_cycles = 1 << 20
    """``run_op`` fails when ``done`` stays 0 this long."""
    weight_read_latency: int
    """Cycles from ``w_addr`` to its word on ``w_rdata`` (each engine's ``W_READ_LATENCY``)."""

    def __init__(self, io, config):
        self.io, self.config = io, config

    async def tick(self) -> None:
        await self.io.tick()

    async def load_weights(self, weights) -> None:
        """Write every weight word (``weight_words`` x ``cols`` int8, in address order) through ``w_*``."""
        cfg, io = self.config, self.io
        words = np.asarray(weights).reshape(cfg.weight_words, cfg.array.cols)
        io.set("w_we", 1)
        for addr, word in enumerate(words):
            io.set("w_addr", addr)
            io.set("w_wdata", pack(word, 8))
            await self.tick()
        io.set("w_we", 0)

    async def read_weight_words(self) -> np.ndarray:
        """Every weight word read through ``w_addr`` / ``w_rdata``: int64 [weight_words, cols]."""
        cfg, io = self.config, self.io
        out = []
        for addr in range(cfg.weight_words):
            io.set("w_addr", addr)
            for _ in range(self.weight_read_latency):
                await self.tick()
            out.append(unpack(io.get("w_rdata"), 8, cfg.array.cols, signed=True))
        return np.array(out, dtype=np.int64)

    async def run_op(self, op: int, g: int = 0, **inputs: int) -> int:
        """Set ``op``, ``g`` (two's complement, ``G_BITS``) and ``inputs``, pulse ``start`` and tick until
        ``done``; return the engine's ``cycles``, checked against the host's own count of busy cycles."""
        io = self.io
        io.set("op", op)
        io.set("g", g & ((1 << G_BITS) - 1))
        for name, value in inputs.items():
            io.set(name, value)
        io.set("start", 1)
        await self.tick()
        io.set("start", 0)
        waited = await self.wait_for_done(op)
        cycles = io.get("cycles")
        if cycles != waited:
            raise AssertionError(f"engine counted {cycles} busy cycles, the host saw {waited}")
        return cycles

    async def wait_for_done(self, op: int) -> int:
        """Advance until ``done`` reads 1 (checked before each cycle); return the cycles it took. Fails
        after ``max_op_cycles`` (naming ``op``)."""
        waited = 0
        while not self.io.get("done"):
            waited += await self.advance(("done",), self.max_op_cycles + 1 - waited)
            if waited > self.max_op_cycles:
                raise AssertionError(f"engine op {op} never finished (done stayed 0 for {self.max_op_cycles} cycles)")
        return waited

    async def advance(self, until: tuple[str, ...], limit: int) -> int:
        """Move on by at least one cycle, at most ``limit``, towards one of the outputs ``until`` reading 1;
        return the cycles moved. Here one ``tick``; a host with nothing to do for a while may skip ahead."""
        await self.tick()
        return 1
