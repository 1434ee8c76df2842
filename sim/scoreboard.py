"""Generic pieces of pezo's cocotb testbenches: config from the environment, clock/reset, scoreboard."""

from __future__ import annotations

import json
import os
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from pezo.golden.config import PerturbConfig


def config_from_env() -> PerturbConfig:
    return PerturbConfig(**json.loads(os.environ["PEZO_CONFIG"]))


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


CLOCK_PERIOD_NS = 10
"""The benches' clock period (100 MHz)."""


async def start_and_reset(dut, cycles: int = 2) -> None:
    """Start a 100 MHz clock on ``dut.clk`` and hold ``dut.rst`` for ``cycles``; return at a falling edge."""
    cocotb.start_soon(Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns").start())
    dut.rst.value = 1
    for _ in range(cycles):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


class Scoreboard:
    """Compares observed port values with the golden model's, cycle by cycle; fails on the first mismatch."""

    def __init__(self, name: str):
        self.name = name
        self.checked = 0
        self.started = time.perf_counter()

    def compare(self, cycle: int, port: str, got: int, expected: int, decode=None) -> None:
        self.checked += 1
        if got != expected:
            detail = ""
            if decode is not None:
                bad = [(i, g, e) for i, (g, e) in enumerate(zip(decode(got), decode(expected))) if g != e]
                detail = f"; first differing lanes (lane, got, expected): {bad[:4]}"
            raise AssertionError(
                f"{self.name}: cycle {cycle} port {port}: got {got:#x}, expected {expected:#x}{detail}"
            )

    def report(self, cycles: int, extra: dict | None = None) -> dict:
        elapsed = time.perf_counter() - self.started
        result = {
            "cycles": cycles,
            "comparisons": self.checked,
            "seconds": elapsed,
            "cycles_per_s": cycles / elapsed if elapsed else float("inf"),
            **(extra or {}),
        }
        path = os.environ.get("PEZO_RESULT")
        if path:
            with open(path, "w") as f:
                json.dump(result, f, indent=2)
        return result
