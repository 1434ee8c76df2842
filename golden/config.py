"""The one frozen configuration object that flows golden -> hw -> sim -> boards.

Every field is validated on construction; a bad field raises one ``ValueError`` that names
the field and its allowed range, so the API and the CLI report bad input the same way.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

STRATEGIES = ("otf", "pregen", "gaussian")
"""Perturbation strategies: on-the-fly LFSR array, pre-generated pool, Gaussian baseline."""

BIT_ORDERS = ("natural", "spread")
"""How an otf lane reads its LFSR state (``lfsr_bit_order``): as is (PeZO), or through
``pezo.golden.rng.lfsr.spread_order``."""
DEFAULT_BIT_ORDER = "spread"
"""The default ``lfsr_bit_order``: ``"spread"`` costs no LUT, no flip-flop and no Fmax (wiring) and takes
the lag-(n - 1) correlation of the 32 x 14 array from +0.478 to +0.054 (benchmarks/results/quality/permuted/);
``"natural"`` is PeZO's array as published (and every result committed before the default changed)."""

RNG_BITS_RANGE = (3, 32)
MAX_RNGS = 1024
MAX_POOL = 1 << 20  # 2^20 values: 15 % of a ZCU102's BRAM at 12 bits; larger pools are not a PeZO design
POOL_BITS_RANGE = (4, 18)
MAX_LANES = 1024
MAX_BANKS = 64
MAX_PERTURB_DIM = (1 << 31) - 1
EPS_SHIFT_RANGE = (0, 24)


class CacheDirError(OSError):
    """pezo's cache root is unusable (a file is in the way); the message names the variable that set it."""


def cache_dir() -> Path:
    """pezo's cache root: ``$PEZO_CACHE_DIR``, else ``$XDG_CACHE_HOME/pezo``, else ``~/.cache/pezo`` (an empty
    variable counts as unset); ``CacheDirError`` if it or a parent is not a directory."""
    if os.environ.get("PEZO_CACHE_DIR"):
        path, source = Path(os.environ["PEZO_CACHE_DIR"]), "PEZO_CACHE_DIR"
    elif os.environ.get("XDG_CACHE_HOME"):
        path, source = Path(os.environ["XDG_CACHE_HOME"]) / "pezo", "XDG_CACHE_HOME"
    else:
        path, source = Path(os.path.expanduser("~")) / ".cache" / "pezo", None
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        problem = f"{existing} is not a directory" + ("" if existing == path else f", so {path} cannot be created")
        if source is None:
            raise CacheDirError(
                f"pezo's cache {path} cannot be created: {existing} is not a directory; set "
                "PEZO_CACHE_DIR to a directory"
            )
        fix = (
            "PEZO_CACHE_DIR at a directory or unset it"
            if source == "PEZO_CACHE_DIR"
            else "XDG_CACHE_HOME at a directory or set PEZO_CACHE_DIR"
        )
        raise CacheDirError(f"{source}={os.environ[source]}: {problem} (pezo's cache); point {fix}")
    return path


def check_int(name: str, value, lo: int, hi: int) -> int:
    """Return ``value`` if it is an integer in ``lo..hi`` (inclusive), else raise one ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {value}")
    return value


def check_bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


class FlatConfig:
    """A frozen dataclass whose ``NESTED`` fields (a ``StreamConfig``, an ``ArrayConfig``) read and write flat:
    ``to_dict`` gives one flat dict in ``JSON_KEYS`` order (a field of its own wins over a nested one of the same
    name), ``replace`` routes every flat name to the object that holds it, ``from_dict`` parses ``to_dict``."""

    NESTED: ClassVar[tuple] = ()
    JSON_KEYS: ClassVar[tuple] = ()

    def check_flat(self, changes: dict) -> None:
        """Checks ``replace`` makes on the flat changes before it builds the nested objects (none by default)."""

    def nested_changes(self, name: str, changes: dict) -> dict:
        """Changes a ``replace`` also makes to nested field ``name`` (none by default)."""
        return {}

    def replace(self, **changes):
        self.check_flat(changes)
        own = {f.name for f in dataclasses.fields(self)}
        for name in self.NESTED:
            part = changes.get(name, getattr(self, name))
            inner = {f.name for f in dataclasses.fields(part)}
            sub = {key: changes.pop(key) for key in list(changes) if key in inner and key not in own}
            sub.update(self.nested_changes(name, changes))
            if sub:
                changes[name] = dataclasses.replace(part, **sub)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        flat = {}
        for name in self.NESTED:
            flat.update(out.pop(name))
        flat.update(out)
        return {key: flat[key] for key in self.JSON_KEYS}

    @classmethod
    def from_dict(cls, fields: dict):
        """The config of a flat dict (``to_dict``'s keys; a missing key keeps its default)."""
        return cls().replace(**fields)


@dataclass(frozen=True)
class StreamConfig:
    """The perturbation stream's parameters, shared by every config that carries a stream (``PerturbConfig``
    adds the generator's geometry; the engines' configs nest one as ``stream``).

    strategy  -- one of ``STRATEGIES``.
    rng_bits  -- width b of every LFSR, 3..32.
    seed      -- master seed: the start state of RNG 0, 1..2^b-1 (an LFSR state is never 0).
    pool_size -- N values in the pre-generated pool, 1..2^20 (default 4095 = 2^12 - 1; for strategy ``pregen``
                 also >= the lanes).
    pool_bits -- width of a pool value, 4..18 (two's complement, pool_bits - 2 fraction bits).
    eps_shift -- epsilon as a right shift s, 0..24: the perturbation stream emits round(z * 2^(12 - s)),
                 i.e. epsilon = 2^(12 - s) output LSBs (``pezo.golden.rng.perturb``); the default 12 gives round(z).
    lfsr_leap -- k, LFSR steps per clock of the on-the-fly array (leap-forward), 1..b (default 1, PeZO's
                 array); coprime to 2^b - 1 so every LFSR keeps its full period. k = b makes each new state
                 b fresh bits of the m-sequence (no overlap with the last one).
    lfsr_bit_order -- how a lane of the on-the-fly array reads its LFSR state, one of ``BIT_ORDERS``:
                 ``"natural"`` (PeZO: the state as is) or ``"spread"`` (the default: state bit j read into
                 significance ``pezo.golden.rng.lfsr.spread_order(b)[j]``: wiring only, it moves the
                 correlation of a value with its own shifted successors from small shifts to the largest).
    """

    strategy: str = "otf"
    rng_bits: int = 14
    seed: int = 1
    pool_size: int = 4095
    pool_bits: int = 12
    eps_shift: int = 12
    lfsr_leap: int = 1
    lfsr_bit_order: str = DEFAULT_BIT_ORDER

    def __post_init__(self):
        self.check_strategy_and_bits()
        check_int("seed", self.seed, 1, self.lfsr_period)
        check_int("pool_size", self.pool_size, 1, MAX_POOL)
        check_int("pool_bits", self.pool_bits, *POOL_BITS_RANGE)
        self.check_epsilon_and_lfsr()

    def check_strategy_and_bits(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        check_int("rng_bits", self.rng_bits, *RNG_BITS_RANGE)

    def check_epsilon_and_lfsr(self) -> None:
        check_int("eps_shift", self.eps_shift, *EPS_SHIFT_RANGE)
        check_int("lfsr_leap", self.lfsr_leap, 1, self.rng_bits)
        common = math.gcd(self.lfsr_leap, self.lfsr_period)
        if common != 1:
            raise ValueError(
                f"lfsr_leap must be coprime to 2^{self.rng_bits} - 1 = {self.lfsr_period} (k steps per "
                f"clock keep the full period only then), got {self.lfsr_leap} (common factor {common})"
            )
        if not isinstance(self.lfsr_bit_order, str) or self.lfsr_bit_order not in BIT_ORDERS:
            raise ValueError(f"lfsr_bit_order must be one of {', '.join(BIT_ORDERS)}, got {self.lfsr_bit_order!r}")

    @property
    def lfsr_period(self) -> int:
        """Period of one maximal-length LFSR: 2^b - 1 cycles."""
        return (1 << self.rng_bits) - 1

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PerturbConfig(StreamConfig):
    """Configuration of a perturbation generator: the stream (``StreamConfig``'s fields) and its geometry.

    n_rngs    -- number of LFSR URNGs in the on-the-fly array (lanes per cycle), 1..min(1024, 2^b-1).
    rewind    -- build the save/restore (rewind) path for MeZO's seed trick.
    lanes     -- values delivered per cycle by the pool and by the Gaussian array (one generator per
                 lane), 1..1024; the otf stream has n_rngs lanes.
    banks     -- BRAM banks the pool is split over: a power of two, 1..64, dividing ``lanes`` (for
                 strategy ``pregen``).
    perturb_dim -- d, values in one perturbation (weights perturbed per ZO step), 1..2^31-1.
    """

    n_rngs: int = 32
    rewind: bool = False
    lanes: int = 8
    banks: int = 8
    perturb_dim: int = 1 << 20

    JSON_KEYS: ClassVar[tuple] = (
        "strategy",
        "n_rngs",
        "rng_bits",
        "seed",
        "rewind",
        "pool_size",
        "pool_bits",
        "lanes",
        "banks",
        "perturb_dim",
        "eps_shift",
        "lfsr_leap",
        "lfsr_bit_order",
    )
    """``to_dict``'s key order (the config.json layout of every generator)."""

    def __post_init__(self):  # StreamConfig's checks with the geometry's in between (one order of errors)
        self.check_strategy_and_bits()
        check_int("n_rngs", self.n_rngs, 1, min(MAX_RNGS, self.lfsr_period))
        check_int("seed", self.seed, 1, self.lfsr_period)
        check_bool("rewind", self.rewind)
        check_int("lanes", self.lanes, 1, MAX_LANES)
        pool = self.strategy == "pregen"  # the pool's relations to lanes bind only when it is built
        check_int("pool_size", self.pool_size, self.lanes if pool else 1, MAX_POOL)
        check_int("pool_bits", self.pool_bits, *POOL_BITS_RANGE)
        check_int("banks", self.banks, 1, min(MAX_BANKS, self.lanes) if pool else MAX_BANKS)
        if self.banks & (self.banks - 1) or (pool and self.lanes % self.banks):
            raise ValueError(f"banks must be a power of two dividing lanes={self.lanes}, got {self.banks}")
        check_int("perturb_dim", self.perturb_dim, 1, MAX_PERTURB_DIM)
        self.check_epsilon_and_lfsr()

    @property
    def pointer_bits(self) -> int:
        """Width of the pointer port: ceil(log2 n), at least 1."""
        return max(1, (self.n_rngs - 1).bit_length())

    @property
    def pool_distinct_perturbations(self) -> int:
        """Distinct perturbations the pool yields with leftover-shift reuse: N / gcd(N, d)."""
        return self.pool_size // math.gcd(self.pool_size, self.perturb_dim)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        return {key: out[key] for key in self.JSON_KEYS}
