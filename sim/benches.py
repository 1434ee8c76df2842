"""Cycle benches: one per hw block, pairing its golden model with seeded stimulus.

A bench knows its component, its input ports, and per cycle: ``drive(cycle)`` -> input values,
``expected()`` -> packed output words (every bit of every lane), ``step(inputs)`` -> advance golden.
The same bench runs under cocotb (``sim.golden_tb``, Icarus / Verilator) and on Amaranth's simulator
(``sim.amaranth_sim``), so stimulus and model are written once.
"""

from __future__ import annotations

import random

from golden.config import PerturbConfig


def pack(values, width: int) -> int:
    """Pack lane values (two's complement for negatives), lane 0 in the least significant bits."""
    mask = (1 << width) - 1
    word = 0
    for i, v in enumerate(values):
        word |= (int(v) & mask) << (i * width)
    return word


def unpack(word: int, width: int, count: int, signed: bool = False) -> list[int]:
    mask = (1 << width) - 1
    out = [(word >> (i * width)) & mask for i in range(count)]
    if signed:
        out = [v - (1 << width) if v >> (width - 1) else v for v in out]
    return out


class URNGBench:
    """URNG array. With rewind: saves held until pointer 0 at 10 % and 67 % of the run (the second
    together with a restore: the swap case), restores at 50 % and 90 %, and random ones (0.5 % each,
    most saves landing at pointer != 0 where they must be ignored)."""

    def __init__(self, config: PerturbConfig, cycles: int, seed: int):
        from golden.urng import URNGArray
        self.config = config
        self.model = URNGArray(config)
        self.rng = random.Random(seed)
        self.inputs = ("en", "save", "restore") if config.rewind else ("en",)
        self.save_at = {cycles // 10, (2 * cycles) // 3} if config.rewind else set()
        self.restore_at = {cycles // 2, (9 * cycles) // 10} if config.rewind else set()
        self.pending_save = self.swap = False
        self.saves = self.restores = 0

    def component(self):
        from hw.urng import URNGArray
        return URNGArray(self.config)

    def expected(self) -> dict[str, int]:
        return {"lanes": pack(self.model.raw_lanes(), self.config.rng_bits), "pointer": self.model.pointer}

    def decode(self, port: str, word: int):
        return unpack(word, self.config.rng_bits, self.config.n_rngs) if port == "lanes" else None

    def drive(self, cycle: int) -> dict[str, int]:
        en = int(self.rng.random() < 0.9)
        if not self.config.rewind:
            return {"en": en}
        pointer = self.model.pointer
        save, restore = int(self.rng.random() < 0.005), int(self.rng.random() < 0.005)
        if cycle in self.save_at:
            self.pending_save, self.swap = True, cycle != min(self.save_at)
        if self.pending_save:
            save, en = 1, 1
            if pointer == 0:
                self.pending_save = False
                restore = int(self.swap)
        if cycle in self.restore_at:
            restore = 1
        self.saves += int(save and pointer == 0)
        self.restores += restore
        return {"en": en, "save": save, "restore": restore}

    def step(self, inputs: dict[str, int]) -> None:
        self.model.step(**{k: bool(v) for k, v in inputs.items()})

    def summary(self) -> dict:
        return {"saves": self.saves, "rewinds": self.restores}

    def check_coverage(self, cycles: int) -> None:
        if self.config.rewind and cycles >= 100:
            assert self.saves >= 2 and self.restores >= 2, "stimulus did not rewind"


class PoolBench:
    """Pool reader: en 90 %, restore (rewind) and next_perturbation 2 % each, plus a scripted rewind
    in the middle of the run."""

    inputs = ("en", "restore", "next_perturbation")

    def __init__(self, config: PerturbConfig, cycles: int, seed: int):
        from golden.pool import PoolReader
        self.config = config
        self.model = PoolReader(config)
        self.rng = random.Random(seed)
        self.cycles = cycles
        self.restores = self.perturbations = 0

    def component(self):
        from hw.pool import PoolReader
        return PoolReader(self.config, values=self.model.values)

    def expected(self) -> dict[str, int]:
        return {"lanes": pack(self.model.lanes(), self.config.pool_bits)}

    def decode(self, port: str, word: int):
        return unpack(word, self.config.pool_bits, self.config.lanes, signed=True)

    def drive(self, cycle: int) -> dict[str, int]:
        restore = int(self.rng.random() < 0.02 or cycle == self.cycles // 2)
        nxt = int(self.rng.random() < 0.02)
        self.restores += restore
        self.perturbations += nxt
        return {"en": int(self.rng.random() < 0.9), "restore": restore, "next_perturbation": nxt}

    def step(self, inputs: dict[str, int]) -> None:
        self.model.step(**{k: bool(v) for k, v in inputs.items()})

    def summary(self) -> dict:
        return {"rewinds": self.restores, "perturbations": self.perturbations}

    def check_coverage(self, cycles: int) -> None:
        if cycles >= 100:
            assert self.restores >= 1 and self.perturbations >= 1


BENCHES = {"urng": URNGBench, "pool": PoolBench}


def make_bench(name: str, config: PerturbConfig, cycles: int, seed: int):
    if name not in BENCHES:
        raise ValueError(f"bench must be one of {', '.join(BENCHES)}, got {name!r}")
    return BENCHES[name](config, cycles, seed)
