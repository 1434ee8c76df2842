"""One perturbation stream over the three strategies: what the PE array consumes, cycle by cycle.

Output: ``stream_lanes(config)`` signed ``STREAM_BITS``-bit values per cycle (n_rngs for ``otf``,
``lanes`` for ``pregen`` and ``gaussian``) and ``valid``. A value is ``+-R(x, a)``: the source's raw
integer x, scaled by 2^a and rounded, then negated for -epsilon (so the -epsilon pass is the exact
mirror of the +epsilon pass). ``R(x, a) = x * 2^a`` for a >= 0,
else ``floor((x + 2^(-a-1)) / 2^-a)`` (round half up). The shift a puts the source in units of
``2^-STREAM_FRAC_BITS`` and applies epsilon = 2^-eps_shift:

=========  ==================================  =========================================
strategy   source x (real value)               a
=========  ==================================  =========================================
otf        LFSR lane v, v / 2^(b-1)            k + 12 + 1 - b - eps_shift, k from the scale LUT
pregen     pool value q, q / 2^(pool_bits-2)   12 + 2 - pool_bits - eps_shift
gaussian   CLT output z, z / 2^8               12 - 8 - eps_shift
=========  ==================================  =========================================

So a value means ``+-epsilon * z`` in output LSBs with epsilon = 2^(12 - eps_shift) LSB. No value
overflows 16 bits, so nothing saturates: otf |v| < 2^(b-1) and a <= 16 - b (k <= 3) give < 2^15;
pregen |q| < 2^(pool_bits-1), a <= 14 - pool_bits give < 2^13; gaussian 1530 * 2^4 < 2^15; rounding
right shifts only shrink magnitudes (``tests/hw/test_perturb.py`` checks the extremes).

Commands (inputs of a clock edge, priority ``next`` > ``rewind`` > ``en``): ``en`` is the consumer's
demand: the vector on the port is consumed on an edge where ``valid`` and ``en`` are high, and a
pipelined stream moves only on ``en`` edges (a consumer holds ``en`` high while it wants data, valid or
not); ``next`` begins the next perturbation; ``rewind`` returns to the start of the current one.
``sign`` (0: +epsilon, 1: -epsilon) is sampled on ``next`` and ``rewind`` edges and holds for the pass
(reset: +epsilon).

Pipeline (``output_stages``): for pregen and gaussian the source's vector passes two registers to the
port (stage 1: R(x, a), the rounding adder; stage 2: the sign, a conditional negation), moved by ``en``
alone (``golden.rng.pipeline.StallPipeline``); the source is consumed on an ``en`` edge where it is valid,
so it runs ahead of the port by the vectors in flight. A ``next`` or ``rewind`` empties the pipeline: with
``en`` held high the first vector of a pass is on the port ``stream_latency`` edges after the command,
then one vector per cycle. Nothing moves without ``en``, so values depend only on the command and ``en``
sequence, never on idle cycles. otf has no output stages (its R(x, a) and sign are combinational behind
the URNG registers): where its next perturbation starts depends on how many vectors were consumed (see
below), and vectors in flight would move it, which would change the sequence PeZO's trainer models
(``golden.zo.families``).

* pregen: ``golden.rng.pool.PoolReader`` (pipelined itself, ``POOL_STAGES``; next: start <- start + d
  mod N, so the next perturbation's start does not depend on how much was consumed).
* gaussian: ``golden.rng.grng.GaussianArray``; next saves the states (the vector the source holds, i.e.
  the first not yet in the pipeline, becomes element 0), rewind restores them. The source is valid from
  the first edge on.
* otf: ``golden.rng.urng.URNGArray`` with rewind. ``next`` enters *aligning*: the array advances
  (valid = 0) until pointer == 0; on that edge it saves the states and the scale LUT reads
  k = LUT[lane 0 state], and the next cycle is valid with element 0 on the port. So the next
  perturbation starts at the first unconsumed vector, rounded up to the rotation (at most n cycles
  lost). Reset is aligning with pointer 0: the first edge starts perturbation 0. A ``rewind`` while
  aligning cancels it (back to the current perturbation's start, same k).
"""

from __future__ import annotations

import numpy as np

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.grng import GRNG_FRAC_BITS, GaussianArray
from pezo.golden.rng.pipeline import StallPipeline
from pezo.golden.rng.pool import POOL_STAGES, PoolReader
from pezo.golden.rng.scale import scale_lut
from pezo.golden.rng.urng import URNGArray
from pezo.golden.rounding import round_shift

STREAM_BITS = 16
STREAM_FRAC_BITS = 12
OUTPUT_STAGES = 2
"""Stream registers behind a pregen or gaussian source: R(x, a) (the rounding adder), then the sign."""


def stream_lanes(config: PerturbConfig) -> int:
    """Values per cycle: one per RNG for ``otf``, ``config.lanes`` otherwise."""
    return config.n_rngs if config.strategy == "otf" else config.lanes


def scale_shift(config: PerturbConfig, k: int = 0) -> int:
    """The net left shift a of the module docstring's table (k: the otf scale LUT entry)."""
    if config.strategy == "otf":
        return k + STREAM_FRAC_BITS + 1 - config.rng_bits - config.eps_shift
    if config.strategy == "pregen":
        return STREAM_FRAC_BITS + 2 - config.pool_bits - config.eps_shift
    return STREAM_FRAC_BITS - GRNG_FRAC_BITS - config.eps_shift


def output_stages(config: PerturbConfig) -> int:
    """Registers between the source and the port: none for otf, ``OUTPUT_STAGES`` otherwise."""
    return 0 if config.strategy == "otf" else OUTPUT_STAGES


def stream_latency(config: PerturbConfig) -> int:
    """``en`` edges after a NEXT / REWIND (or reset) until the first vector is on the port, otf
    alignment not counted: the stream's registers plus the pool reader's (0 for otf)."""
    return output_stages(config) + (POOL_STAGES if config.strategy == "pregen" else 0)


def scale_round(x, a: int):
    """R(x, a): x * 2^a, or round half up of x / 2^-a (integers or int64 arrays)."""
    if a >= 0:
        return np.asarray(x, dtype=np.int64) << a
    return round_shift(x, -a)


def emit(x, a: int, negate: bool) -> np.ndarray:
    """One stream value per source value: +-R(x, a)."""
    p = scale_round(x, a)
    return -p if negate else p


class PerturbationStream:
    """Cycle model of ``hw.rng.perturb.PerturbationStream`` (see the module docstring)."""

    def __init__(self, config: PerturbConfig):
        if not isinstance(config, PerturbConfig):
            raise ValueError(f"config must be a PerturbConfig, got {type(config).__name__}")
        self.config = config
        self.negate = False
        self.pipeline = StallPipeline(OUTPUT_STAGES) if output_stages(config) else None
        self.source_valid = False  # otf and gaussian sources (registers); pregen has its own valid
        if config.strategy == "otf":
            self.source = URNGArray(config.replace(rewind=True))
            self.lut = scale_lut(config)
            self.aligning = True
            self.k = 0  # the LUT's read register (undefined in RTL before the first read; valid = 0 then)
        elif config.strategy == "pregen":
            self.source = PoolReader(config)
        else:
            self.source = GaussianArray(config)

    @property
    def valid(self) -> bool:
        return self.pipeline.valid if self.pipeline else self.source_valid

    def shift(self) -> int:
        return scale_shift(self.config, self.k if self.config.strategy == "otf" else 0)

    def lanes(self) -> np.ndarray | None:
        """The values on the port this cycle (None while not valid)."""
        if self.pipeline:
            return self.pipeline.output()
        return emit(self.source.lanes(), self.shift(), self.negate) if self.source_valid else None

    def _source(self) -> np.ndarray | None:
        """The raw vector the source holds this cycle (None: not valid)."""
        if self.config.strategy == "pregen":
            return self.source.lanes()
        return self.source.lanes() if self.source_valid else None

    def step(self, en: bool = False, next: bool = False, rewind: bool = False, sign: bool = False) -> None:
        """One clock edge with the given inputs."""
        command = bool(next or rewind)
        restore = bool(rewind) and not next
        if self.pipeline:  # the source's vector (None: not valid) enters the output registers
            x = self._source()
            entry, holds = (None if x is None else emit(x, self.shift(), self.negate)), x is not None
        else:  # otf: the vector is on the port itself; the source holds one exactly when source_valid
            entry, holds = None, self.source_valid
        consume = bool(en) and holds and not command  # the source's vector leaves it
        if command:
            self.negate = bool(sign)
        strategy = self.config.strategy
        if strategy == "pregen":
            self.source.step(en=bool(en), restore=restore, next_perturbation=bool(next))
        elif strategy == "gaussian":
            self.source.step(en=consume, save=bool(next), restore=restore)
            self.source_valid = True
        else:
            self._step_otf(consume, bool(next), restore)
        if self.pipeline:
            self.pipeline.step(entry, en, flush=command)

    def _step_otf(self, consume: bool, next: bool, restore: bool) -> None:
        urng = self.source
        start_now = self.aligning and urng.pointer == 0 and not (next or restore)
        if start_now:
            self.k = int(self.lut[int(urng.raw_lanes()[0])])
        urng.step(
            en=consume or (self.aligning and urng.pointer != 0 and not (next or restore)),
            save=start_now,
            restore=restore,
        )
        if next:
            self.aligning, self.source_valid = True, False
        elif restore:
            self.aligning, self.source_valid = False, True
        elif self.aligning:
            self.aligning = not start_now
            self.source_valid = start_now

    def perturbation(self, count: int | None = None) -> np.ndarray:
        """Consume the current perturbation's first ``count`` values (default d) from the current
        position, as a consumer holding ``en`` high would (the sampler view).

        Bit for bit ``perturbation_by_cycles`` and leaves the same state: cycle by cycle until the stream is
        steady (``_steady``: one vector per ``en`` edge from then on; a NEXT's otf alignment, a pipeline's
        refill), then every remaining vector in one block (``_bulk``). The gaussian source is stepped."""
        count = self.config.perturb_dim if count is None else count
        if count <= 0 or self.config.strategy == "gaussian":
            return self.perturbation_by_cycles(count)
        out, got = [], 0
        while got < count and not self._steady():
            if self.valid:
                out.append(self.lanes())
                got += len(out[-1])
            self.step(en=True)
        if got < count:
            out.append(self._bulk(-(-(count - got) // stream_lanes(self.config))).ravel())
        return np.concatenate(out)[:count]

    def perturbation_by_cycles(self, count: int | None = None) -> np.ndarray:
        """``perturbation`` by stepping the cycle model one edge at a time (the reference)."""
        count = self.config.perturb_dim if count is None else count
        out = []
        got = 0
        while got < count:
            if self.valid:
                vector = self.lanes()
                out.append(vector)
                got += len(vector)
            self.step(en=True)
        return np.concatenate(out)[:count]

    def _steady(self) -> bool:
        """Whether every ``en`` edge from now on consumes one valid vector and shows the next: otf once aligned,
        pregen once the pool reader's and the stream's registers are all full."""
        if self.config.strategy == "otf":
            return self.source_valid and not self.aligning
        return all(x is not None for x in self.pipeline.stages + self.source.pipeline.stages)

    def _bulk(self, vectors: int) -> np.ndarray:
        """The next ``vectors`` port vectors [vectors, lanes] of a steady stream, and the state after as many
        ``en`` edges."""
        if self.config.strategy == "otf":
            return emit(self.source.run(vectors)[0], self.shift(), self.negate)
        pool, lanes = self.source, self.config.lanes
        # the pool's port and registers, then the windows it reads next: row j reaches the port at edge j
        reads = pool.values[(pool.address + np.arange(vectors * lanes)) % len(pool.values)].reshape(vectors, lanes)
        pool_rows = np.concatenate([np.stack(pool.pipeline.stages[::-1]), reads])
        # the stream's port and registers, then the pool's rows scaled and signed (the stream's stages)
        rows = np.concatenate([np.stack(self.pipeline.stages[::-1]), emit(pool_rows, self.shift(), self.negate)])
        pool.address = (pool.address + vectors * lanes) % len(pool.values)
        pool.pipeline.stages = [row.copy() for row in pool_rows[vectors : vectors + POOL_STAGES][::-1]]
        self.pipeline.stages = [row.copy() for row in rows[vectors : vectors + OUTPUT_STAGES][::-1]]
        return rows[:vectors]
