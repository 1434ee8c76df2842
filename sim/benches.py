"""Cycle benches: one per hw block, pairing its golden model with seeded stimulus.

A bench knows its component, its input ports, and per cycle: ``drive(cycle)`` -> input values,
``expected()`` -> packed output words (every bit of every lane), ``step(inputs)`` -> advance golden.
The same bench runs under cocotb (``sim.golden_tb``, Icarus / Verilator) and on Amaranth's simulator
(``sim.amaranth_sim``), so stimulus and model are written once. ``bench_name(config, unit)`` names the
bench of a unit (a generator's is its strategy's, ``hw.strategies.Strategy.bench``).
"""

from __future__ import annotations

import random

import numpy as np

import pezo.golden.rng.grng as golden_grng
import pezo.golden.rng.perturb as golden_perturb
import pezo.golden.rng.pool as golden_pool
import pezo.golden.rng.scale as golden_scale
import pezo.golden.rng.urng as golden_urng
import pezo.hw.rng.grng as hw_grng
import pezo.hw.rng.perturb as hw_perturb
import pezo.hw.rng.pool as hw_pool
import pezo.hw.rng.scale as hw_scale
import pezo.hw.rng.urng as hw_urng
from pezo.golden.config import PerturbConfig
from pezo.golden.rng.grng import GRNG_BITS, sample_statistics
from pezo.golden.rng.perturb import STREAM_BITS, stream_lanes
from pezo.hw.strategies import STRATEGIES, strategy


def pack(values, width: int) -> int:
    """Pack lane values (two's complement for negatives), lane 0 in the least significant bits."""
    mask = (1 << width) - 1
    if width in _BYTE_WIDTHS:  # the lanes as little-endian bytes: one int.from_bytes instead of a loop
        lanes = np.asarray(values, dtype=np.int64) & np.int64(mask)
        return int.from_bytes(lanes.astype(_BYTE_WIDTHS[width]).tobytes(), "little")
    word = 0
    for v in reversed(values.tolist() if isinstance(values, np.ndarray) else list(values)):
        word = (word << width) | (int(v) & mask)
    return word


_BYTE_WIDTHS = {8: "<u1", 16: "<u2", 32: "<u4"}


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
        self.config = config
        self.model = golden_urng.URNGArray(config)
        self.rng = random.Random(seed)
        self.inputs = ("en", "save", "restore") if config.rewind else ("en",)
        self.save_at = {cycles // 10, (2 * cycles) // 3} if config.rewind else set()
        self.restore_at = {cycles // 2, (9 * cycles) // 10} if config.rewind else set()
        self.pending_save = self.swap = False
        self.saves = self.restores = 0

    def component(self):
        return hw_urng.URNGArray(self.config)

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
    """Pool reader: en (ready) 90 %, restore (rewind) and next_perturbation 2 % each, plus a scripted
    rewind in the middle of the run. ``lanes`` is compared on valid cycles (the pipeline refills for
    ``POOL_STAGES`` cycles after each command)."""

    inputs = ("en", "restore", "next_perturbation")

    def __init__(self, config: PerturbConfig, cycles: int, seed: int):
        self.config = config
        self.model = golden_pool.PoolReader(config)
        self.rng = random.Random(seed)
        self.cycles = cycles
        self.restores = self.perturbations = 0

    def component(self):
        return hw_pool.PoolReader(self.config, values=self.model.values)

    def expected(self) -> dict[str, int]:
        valid = self.model.valid
        return {"valid": int(valid), "lanes": pack(self.model.lanes(), self.config.pool_bits) if valid else None}

    def decode(self, port: str, word: int):
        return unpack(word, self.config.pool_bits, self.config.lanes, signed=True) if port == "lanes" else [word]

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


class ScaleBench:
    """Scale LUT: a random state every cycle, read 50 %; runs of states from the real m-sequence so
    that every entry class (every k) is read."""

    inputs = ("state", "read")

    def __init__(self, config: PerturbConfig, cycles: int, seed: int):
        self.config = config
        self.model = golden_scale.ScaleLUTReader(config)
        self.rng = random.Random(seed)
        self.shifts_seen = set()

    def component(self):
        return hw_scale.ScaleLUT(self.config, lut=self.model.lut)

    def expected(self) -> dict:
        return {"shift": self.model.shift}  # None (undefined BRAM output) until the first read

    def decode(self, port: str, word: int):
        return [word]

    def drive(self, cycle: int) -> dict[str, int]:
        return {"state": self.rng.randrange(1 << self.config.rng_bits), "read": int(self.rng.random() < 0.5)}

    def step(self, inputs: dict[str, int]) -> None:
        self.model.step(inputs["state"], bool(inputs["read"]))
        if self.model.shift is not None:
            self.shifts_seen.add(self.model.shift)

    def summary(self) -> dict:
        return {"shifts_seen": sorted(self.shifts_seen)}

    def check_coverage(self, cycles: int) -> None:
        if cycles >= 10_000:
            assert self.shifts_seen == set(int(k) for k in self.model.lut), "not every LUT value was read"


class GaussianBench:
    """CLT generator array with rewind: en 90 %, save 2 %, restore 0.5 % plus scripted ones. Each
    sequence position's outputs are recorded once (replays after a rewind are not double-counted) for
    the statistical tests (``golden.rng.grng.sample_statistics``)."""

    def __init__(self, config: PerturbConfig, cycles: int, seed: int):
        self.config = config.replace(rewind=True)
        self.model = golden_grng.GaussianArray(self.config)
        self.rng = random.Random(seed)
        self.inputs = ("en", "save", "restore")
        self.cycles = cycles
        self.position = self.saved_position = self.frontier = 0
        self.samples = []
        self.saves = self.restores = 0

    def component(self):
        return hw_grng.GaussianArray(self.config)

    def expected(self) -> dict[str, int]:
        return {"lanes": pack(self.model.lanes(), GRNG_BITS)}

    def decode(self, port: str, word: int):
        return unpack(word, GRNG_BITS, self.config.lanes, signed=True)

    def drive(self, cycle: int) -> dict[str, int]:
        save = int(self.rng.random() < 0.02 or cycle == self.cycles // 10)
        restore = int(self.rng.random() < 0.005 or cycle == self.cycles // 2)
        return {"en": int(self.rng.random() < 0.9), "save": save, "restore": restore}

    def step(self, inputs: dict[str, int]) -> None:
        if inputs["en"] and not inputs["restore"] and self.position == self.frontier:
            self.samples.append(self.model.lanes())
            self.frontier += 1
        saved = self.position
        if inputs["restore"]:
            self.position = self.saved_position
        elif inputs["en"]:
            self.position += 1
        if inputs["save"]:
            self.saved_position = saved
        self.saves += inputs["save"]
        self.restores += inputs["restore"]
        self.model.step(**{k: bool(v) for k, v in inputs.items()})

    def statistics(self) -> dict:
        return sample_statistics(np.concatenate(self.samples)) if self.samples else {}

    def summary(self) -> dict:
        return {"saves": self.saves, "rewinds": self.restores, "statistics": self.statistics()}

    def check_coverage(self, cycles: int) -> None:
        if cycles >= 100:
            assert self.saves >= 1 and self.restores >= 1


class StreamBench:
    """Perturbation stream: en 90 %, next and rewind 1 % each with a random sign, and a MeZO step in
    the middle (next +, a full pass, rewind -, a full pass, rewind +, a full pass). ``lanes`` is
    compared on valid cycles (while aligning it carries the source's skipped values)."""

    inputs = ("en", "next", "rewind", "sign")

    def __init__(self, config: PerturbConfig, cycles: int, seed: int):
        self.config = config
        self.model = golden_perturb.PerturbationStream(config)
        self.rng = random.Random(seed)
        self.lanes = stream_lanes(config)
        self.script = self._mezo_script(cycles // 2)
        self.counts = {"next": 0, "rewind": 0, "minus": 0, "valid": 0, "shifts": set()}

    def _mezo_script(self, at: int) -> dict[int, dict[str, int]]:
        passes = -(-min(self.config.perturb_dim, 40 * self.lanes) // self.lanes)
        script, t = {at: {"next": 1, "sign": 0}}, at + self.config.n_rngs + 2
        for sign in (1, 0):
            t += passes + 1
            script[t] = {"rewind": 1, "sign": sign}
        return script

    def component(self):
        return hw_perturb.PerturbationStream(self.config)

    def expected(self) -> dict:
        return {
            "valid": int(self.model.valid),
            "lanes": pack(self.model.lanes(), STREAM_BITS) if self.model.valid else None,
        }

    def decode(self, port: str, word: int):
        return unpack(word, STREAM_BITS, self.lanes, signed=True) if port == "lanes" else [word]

    def drive(self, cycle: int) -> dict[str, int]:
        inputs = {
            "en": int(self.rng.random() < 0.9),
            "next": int(self.rng.random() < 0.01),
            "rewind": int(self.rng.random() < 0.01),
            "sign": self.rng.getrandbits(1),
        }
        inputs.update(self.script.get(cycle, {}))
        return inputs

    def step(self, inputs: dict[str, int]) -> None:
        c = self.counts
        c["valid"] += int(self.model.valid)
        c["next"] += inputs["next"]
        c["rewind"] += inputs["rewind"]
        self.model.step(**{k: bool(v) for k, v in inputs.items()})
        c["minus"] += int(self.model.negate)
        if self.config.strategy == "otf":
            c["shifts"].add(self.model.k)

    def summary(self) -> dict:
        return {**self.counts, "shifts": sorted(self.counts["shifts"])}

    def check_coverage(self, cycles: int) -> None:
        if cycles >= 1000:
            c = self.counts
            assert c["next"] >= 5 and c["rewind"] >= 5 and 0 < c["minus"] < cycles and c["valid"] > cycles // 2


BENCHES = {"urng": URNGBench, "pool": PoolBench, "scale": ScaleBench, "gaussian": GaussianBench, "stream": StreamBench}
"""Bench name -> bench; a strategy's generator bench is ``hw.strategies.strategy(name).bench``."""
UNIT_BENCHES = ("stream", "scale")
"""Units other than the generator with a bench of their own (named as the unit)."""
assert all(s.bench in BENCHES for s in STRATEGIES.values()), "hw.strategies names a bench sim.benches lacks"


def bench_name(config: PerturbConfig, unit: str = "generator") -> str:
    """The bench of ``unit`` (generator, stream or scale) of ``config``."""
    if unit == "generator":
        return strategy(config.strategy).bench
    if unit in UNIT_BENCHES:
        return unit
    raise ValueError(f"unit must be one of generator, {', '.join(UNIT_BENCHES)}, got {unit!r}")


def make_bench(name: str, config: PerturbConfig, cycles: int, seed: int):
    if name not in BENCHES:
        raise ValueError(f"bench must be one of {', '.join(BENCHES)}, got {name!r}")
    return BENCHES[name](config, cycles, seed)
