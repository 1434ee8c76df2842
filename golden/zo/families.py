"""One sampler interface for the six perturbation families the MeZO trainer can use.

``make_sampler(family, dim, seed, **options)`` returns a ``Sampler`` whose ``segment(index, offset,
size)`` is ``z[offset:offset+size]`` (float32) of perturbation number ``index`` (MeZO's step seed: the
trainer asks for ``index = step * q + query``). Values are a pure function of ``(family, dim, seed,
options, index, offset, size)``: a sampler keeps no state that changes what it returns (its only
mutable member is a cache of scaled tables), so the +eps pass, the -eps pass and the update all
regenerate the same z. ``stream(index, offset, size)`` reads the same segment in consecutive pieces
(``SegmentStream.read(out)``), so a consumer can walk a large tensor in cache-sized pieces without
materialising its z: the pieces concatenated are ``segment(index, offset, size)`` bit for bit (gaussian and
uniform continue one generator, the PeZO families are a pure stream position; other samplers materialise the
segment once). A segment materialises its ``size`` float32 values and bounded scratch (the
PeZO families: none beyond their tables of O(2^b + N + 2^16) entries; rademacher: one byte per value
while unpacking bits), never a d-length array, so ZO training stays within a few percent of inference
memory. (Building a pezo-otf sampler with scaling ``lut`` or ``exact`` runs ``pezo.golden.rng.scale``'s FFT,
which holds d int64 offsets for a moment; that is construction, not training.)

=============  ==========================================================================================
family         element j of perturbation t
=============  ==========================================================================================
gaussian       MeZO: N(0, 1), ``Generator(PCG64(SeedSequence([seed, t, offset]))).standard_normal`` (float32;
               compiled by ``normal32`` when numba is present, the same values)
rademacher     +-1 with probability 1/2, same keying (random bytes, unpacked bits)
uniform        U(-1, 1), same keying, no modulus scaling (E||z|| = sqrt(d/3), 0.58x Gaussian's)
naive-int      PeZO Table 3's collapsing "uniform" row: the raw b-bit integers of pezo-otf's URNG array,
               ``v`` in [-(2^(b-1) - 1), 2^(b-1) - 1], used directly as z (no ``/ 2^(b-1)``, no scaling)
pezo-pregen    PeZO pre-generation: ``pool[(t*d + j) mod N]``, the BRAM pool ``pezo.golden.rng.pool.pool_values``
               in real units ``q / 2^(pool_bits-2)`` (pre-scaled to E||z|| of a d-dim Gaussian)
pezo-otf       PeZO on-the-fly: lane ``j mod n`` of relative cycle ``j // n`` of the rotating URNG array
               (``pezo.golden.rng.urng``) started at perturbation t's aligned cycle, ``v / 2^(b-1)``, times the
               adaptive modulus scale (``pezo.golden.rng.scale``): 2^k from the LUT (default), Eq. 3's exact
               factor, or 1
=============  ==========================================================================================

Keying of the NumPy families. ``gaussian``, ``rademacher`` and ``uniform`` seed one generator per
*segment*, keyed by the segment's offset, so a segment is random access; the values therefore depend
on the trainer's tensor partition (a segment of ``(t, 0, 10)`` is not the first half of ``(t, 0, 20)``).
The trainer's partition is fixed (one segment per parameter tensor, in parameter order), so this is
exactly MeZO's behaviour, whose per-parameter ``torch.normal`` calls also depend on the tensor shapes.
``uniform`` has E z_j^2 = 1/3, so its norm is about sqrt(d/3), a factor sqrt(3) below Gaussian's
E||z|| ~ sqrt(d): un-scaled, but within a constant of MeZO's step (it acts like lr/3), so it does not
collapse. ``naive-int`` is what PeZO Sec. 3.2 blames for Table 3's collapse ("the large integers in
originally generated uniform random numbers can lead to an overly significant perturbation"): the
URNG's integers taken as z, E z_j^2 = (2^(b-1) - 1) 2^(b-1) / 3 ~ 4^(b-1) / 3, so the perturbation
eps*z is 2^(b-1)/sqrt(3) times MeZO's in norm (73.6x at b = 8, 4730x at b = 14) and the SPSA step
lr*g*z, g ~ z.grad, E z_j^2 ~ 4^(b-1)/3 times (5 419x at b = 8, 2.2e7x at b = 14).

The PeZO families reproduce the hardware stream (``pezo.golden.rng.perturb.PerturbationStream``) value for
value: the stream's integer for element j of perturbation t is ``z * 2^(12 - eps_shift)`` (rounded
half up by ``pezo.golden.rng.perturb.scale_round`` when the stream's shift is negative), for a consumer that
takes each perturbation's d values (``en`` on every valid cycle) and then pulses ``next``.

* naive-int: exactly pezo-otf with ``scaling="none"`` times 2^(b-1) (the same lanes, cycles and start
  index e_t below), so its values are the stream's signed lane integers before any scaling.
* pezo-pregen: leftover-shift reuse, ``start_t = t*d mod N`` (``PoolReader``: next perturbation
  starts d values after the current start, whatever was consumed).
* pezo-otf: after reset the first edge starts perturbation 0 at array cycle 0 (pointer 0, RNG 0 at
  m-sequence index 0, the seed). A perturbation consumes ``C = ceil(d/n)`` enabled cycles; the ``next``
  edge does not advance the array; the aligner then advances it to the next multiple of n (the edge
  on which the pointer is 0 saves the states and reads the LUT, without advancing). So perturbation
  t starts after ``A_t = t * n * ceil(C / n) = t * n * ceil(d / n^2)`` enabled cycles, and RNG 0 then
  sits at m-sequence index::

      e_t = k * t * n * ceil(d / n^2)  mod  (2^b - 1)     (k = ``leap``, LFSR steps per clock, default 1)

  Element j is the signed m-sequence value at ``(e_t + element_offsets[j]) mod (2^b - 1)``
  (``pezo.golden.rng.scale.element_offsets``), the state read in ``bit_order`` (``lane_states``), and the LUT
  shift is ``scale_lut[lane_states[e_t]]`` (what lane 0 shows at the start, the LUT address of the hardware).

Parameter policy (bad input raises one ``ValueError`` naming the parameter and its allowed range):
unknown family; ``dim`` outside 1..2^31-1; ``seed`` outside 0..2^64-1 (NumPy families) or below 1
(PeZO families; pezo-otf folds a seed above 2^b - 1 onto 1..2^b - 1, b = ``rng_bits``, so every width takes
every seed; the pool's seed must be in PerturbConfig's 1..2^14-1);
``index < 0``; a segment outside 0..dim; an option the family does not take; ``pool_size``,
``pool_bits``, ``n_rngs``, ``rng_bits`` outside PerturbConfig's ranges (its own error); ``rng_bits`` >
16 for pezo-otf and naive-int (the LUT and the value table have 2^b entries); ``scaling`` not in ``SCALINGS``.
PeZO (Sec. 3.1) sizes pools and RNG arrays as 2^k - 1 because layer sizes are powers of two: a
power-of-two ``pool_size`` or ``n_rngs`` (>= 2) warns with ``PowerOfTwoWarning``. Configurations under
which every perturbation is the same vector are errors: a ``pool_size`` dividing ``dim`` (start_t =
0 for all t), and an otf start step ``n * ceil(d / n^2)`` that is a multiple of ``2^b - 1``. An otf
sequence whose near-repeat period (``pezo.golden.rng.urng.near_repeat``: perturbation t + D a copy of t
shifted by a few LFSR steps) is below ``NEAR_REPEAT_MIN_PERIOD`` perturbations warns with
``NearRepeatWarning`` on construction; ``Sampler.check_near_repeat(perturbations)`` warns for a run's length.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from pezo.golden.config import DEFAULT_BIT_ORDER, MAX_PERTURB_DIM, PerturbConfig, check_int
from pezo.golden.rng.lfsr import offset_to_signed
from pezo.golden.rng.pool import pool_values
from pezo.golden.rng.scale import exact_factors, lane_states, msequence, scale_lut
from pezo.golden.rng.urng import (
    NEAR_REPEAT_MIN_PERIOD,
    NearRepeatWarning,
    near_repeat,
    near_repeat_message,
    rng_phases,
    warn_near_repeat,
)
from pezo.golden.zo.normal32 import standard_normal_f32

FAMILIES = ("gaussian", "rademacher", "uniform", "naive-int", "pezo-pregen", "pezo-otf")
SCALINGS = ("lut", "exact", "none")
"""pezo-otf scaling: the hardware's power-of-two LUT, PeZO Eq. 3's exact factor, or none (ablation)."""

MAX_SEED = (1 << 64) - 1
MAX_INDEX = (1 << 63) - 1
OTF_MAX_RNG_BITS = 16  # = pezo.golden.rng.scale.MAX_SCALE_RNG_BITS; also bounds the 2^b-entry value table
OTF_CHUNK = 1 << 16
"""Target elements per precomputed otf offset chunk (rounded to a multiple of n^2, at most d)."""


def _check_int(name: str, value, lo: int, hi: int) -> int:
    """``check_int`` that also accepts NumPy integers (a trainer's step counters often are)."""
    if isinstance(value, np.integer):
        value = int(value)
    return check_int(name, value, lo, hi)


class PowerOfTwoWarning(UserWarning):
    """A pool size or RNG count that is a power of two (PeZO advises 2^k - 1)."""


class SpreadLeapWarning(UserWarning):
    """A spread bit order whose leap k divides b - 1: the order's unavoidable 3/8 peak (shift b - 1) lands at
    lag (b - 1)/k clocks, i.e. inside small lags."""


def _is_power_of_two(x: int) -> bool:
    return x >= 2 and x & (x - 1) == 0


class Sampler:
    """Base class: perturbation number ``index`` of dimension ``dim``, random access by segment."""

    family: str = ""

    def __init__(self, dim: int, seed: int):
        self.dim = check_int("dim", dim, 1, MAX_PERTURB_DIM)
        self.seed = seed

    # -- public interface ------------------------------------------------------------------------
    def segment(self, index: int, offset: int, size: int) -> np.ndarray:
        """float32 ``z[offset:offset+size]`` of perturbation ``index``."""
        index = _check_int("index", index, 0, MAX_INDEX)
        offset = _check_int("offset", offset, 0, self.dim)
        size = _check_int("size", size, 0, self.dim - offset)
        return self._segment(index, offset, size)

    def stream(self, index: int, offset: int, size: int) -> SegmentStream:
        """``segment(index, offset, size)`` read in consecutive pieces (``SegmentStream.read``)."""
        index = _check_int("index", index, 0, MAX_INDEX)
        offset = _check_int("offset", offset, 0, self.dim)
        size = _check_int("size", size, 0, self.dim - offset)
        return self._stream(index, offset, size)

    def perturbation(self, index: int) -> np.ndarray:
        """The whole perturbation: ``segment(index, 0, dim)``."""
        return self.segment(index, 0, self.dim)

    def options(self) -> dict:
        return {}

    def check_near_repeat(self, perturbations: int) -> dict | None:
        """Warn when perturbations 0 .. ``perturbations`` - 1 contain shifted copies of each other (pezo-otf
        only, ``pezo.golden.rng.urng.near_repeat``); return the near-repeat summary, None for other families."""
        return None

    def describe(self) -> dict:
        """Family, dimension, seed and options (JSON-able), plus cheap statistics."""
        return {"family": self.family, "dim": self.dim, "seed": self.seed, "options": self.options()}

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options().items())
        return f"make_sampler({self.family!r}, {self.dim}, seed={self.seed}{opts})"

    def _segment(self, index: int, offset: int, size: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _stream(self, index: int, offset: int, size: int) -> SegmentStream:
        """Any sampler: the segment materialised on the first read, handed out in slices."""
        return SegmentStream(size, lambda: self._segment(index, offset, size))


class SegmentStream:
    """One segment read front to back: ``read(out)`` fills ``out`` (float32, 1-D) with the next ``len(out)`` values.

    ``fill(out, position)`` (given) writes the values from ``position`` on (a sequential source may ignore it: reads
    are consecutive); ``whole()`` (given instead) returns the segment, materialised once. Reading past the
    segment's end raises ``ValueError``."""

    def __init__(self, size: int, whole=None, fill=None):
        self.size, self.position = size, 0
        self._whole, self._fill, self._values = whole, fill, None

    def read(self, out: np.ndarray) -> np.ndarray:
        count = out.shape[0]
        if self.position + count > self.size:
            raise ValueError(f"read of {count} values at {self.position} passes the segment's end {self.size}")
        if self._fill is not None:
            self._fill(out, self.position)
        else:
            if self._values is None:
                self._values = self._whole()
            out[...] = self._values[self.position : self.position + count]
        self.position += count
        return out


class _NumpySampler(Sampler):
    """NumPy-generated families, one PCG64 stream per (seed, index, offset)."""

    def __init__(self, dim: int, seed: int):
        super().__init__(dim, check_int("seed", seed, 0, MAX_SEED))

    def _rng(self, index: int, offset: int) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.seed, index, offset])))


class GaussianSampler(_NumpySampler):
    """MeZO's z ~ N(0, I): float32 ziggurat draws, one generator per segment."""

    family = "gaussian"

    def _segment(self, index, offset, size):
        return standard_normal_f32(self._rng(index, offset), np.empty(size, dtype=np.float32))

    def _stream(self, index, offset, size):
        rng = self._rng(index, offset)  # the segment's generator, continued piece by piece (the same draws)
        return SegmentStream(size, fill=lambda out, _: standard_normal_f32(rng, out))


class RademacherSampler(_NumpySampler):
    """+-1 each with probability 1/2: one random bit per value (bytes unpacked, bit 1 -> -1)."""

    family = "rademacher"
    _SIGNS = np.array([1.0, -1.0], dtype=np.float32)

    def _segment(self, index, offset, size):
        raw = np.frombuffer(self._rng(index, offset).bytes((size + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(raw, count=size)
        return np.take(self._SIGNS, bits)


class UniformSampler(_NumpySampler):
    """Naive uniform U(-1, 1) (PeZO Table 3), no modulus scaling: E||z||^2 = d/3."""

    family = "uniform"

    def _segment(self, index, offset, size):
        return self._to_symmetric(self._rng(index, offset).random(size, dtype=np.float32))

    def _stream(self, index, offset, size):
        rng = self._rng(index, offset)
        return SegmentStream(size, fill=lambda out, _: self._to_symmetric(rng.random(dtype=np.float32, out=out)))

    @staticmethod
    def _to_symmetric(out: np.ndarray) -> np.ndarray:
        """[0, 1) -> [-1, 1), in place."""
        out *= 2.0
        out -= 1.0
        return out


class PregenSampler(Sampler):
    """PeZO pre-generation: the BRAM pool with leftover-shift reuse (see the module docstring)."""

    family = "pezo-pregen"

    def __init__(self, dim: int, seed: int = 1, pool_size: int = 4095, pool_bits: int = 12):
        super().__init__(dim, seed)
        self.config = PerturbConfig(
            strategy="pregen", pool_size=pool_size, pool_bits=pool_bits, seed=seed, perturb_dim=dim, lanes=1, banks=1
        )
        if dim % pool_size == 0:
            raise ValueError(
                f"pool_size must not divide dim={dim} (every perturbation would be the same vector), got {pool_size}"
            )
        if _is_power_of_two(pool_size):
            warnings.warn(
                f"pool_size={pool_size} is a power of two; PeZO advises 2^k - 1 (e.g. {pool_size - 1})",
                PowerOfTwoWarning,
                stacklevel=3,
            )
        pool = pool_values(self.config).astype(np.float32) / np.float32(1 << (pool_bits - 2))
        self.pool = pool
        self._table = np.concatenate([pool, pool])  # any window of <= N values is one slice

    def start(self, index: int) -> int:
        """Pool address of element 0 of perturbation ``index``: index * d mod N."""
        return index * self.dim % self.config.pool_size

    def options(self):
        return {"pool_size": self.config.pool_size, "pool_bits": self.config.pool_bits}

    def describe(self):
        out = super().describe()
        out["distinct_perturbations"] = self.config.pool_distinct_perturbations
        return out

    def _stream(self, index, offset, size):
        return _positional_stream(self, index, offset, size)

    def _segment(self, index, offset, size):
        n = self.config.pool_size
        s = (index * self.dim + offset) % n
        out = np.empty(size, dtype=np.float32)
        head = min(n, size)
        out[:head] = self._table[s : s + head]
        filled = head
        while filled < size:  # out[i + N] = out[i]: doubling copies
            count = min(filled, size - filled)
            out[filled : filled + count] = out[:count]
            filled += count
        return out


def _positional_stream(sampler: Sampler, index: int, offset: int, size: int) -> SegmentStream:
    """A family whose element j is a pure function of its position: each piece is the segment at its own offset."""

    def fill(out, position):
        out[...] = sampler._segment(index, offset + position, out.shape[0])

    return SegmentStream(size, fill=fill)


_OPTION_NAMES = {"lfsr_leap": "leap", "lfsr_bit_order": "bit_order", "perturb_dim": "dim"}
"""PerturbConfig fields -> the pezo-otf option names (for messages)."""


class OtfSampler(Sampler):
    """PeZO on-the-fly: the rotating URNG array with adaptive modulus scaling (module docstring).

    Fast path: element j = c*C + i (C a multiple of n^2) sits at m-sequence offset
    ``c*C/n + rel[i]`` with ``rel = element_offsets[:C]`` unreduced (the offsets of a block n^2 later
    are n larger, mod P), so a chunk is one ``np.take`` from a float32 table of the signed sequence
    tiled to ``2P + C/n`` values, starting at ``(e_t + c*C/n) mod P``; only C int offsets are stored.
    """

    family = "pezo-otf"

    def __init__(
        self,
        dim: int,
        seed: int = 1,
        n_rngs: int = 31,
        rng_bits: int = 14,
        scaling: str = "lut",
        leap: int = 1,
        bit_order: str = DEFAULT_BIT_ORDER,
    ):
        if (
            all(isinstance(v, int) and not isinstance(v, bool) for v in (seed, rng_bits))
            and 3 <= rng_bits <= 32
            and seed > (1 << rng_bits) - 1
        ):
            seed = 1 + (seed - 1) % ((1 << rng_bits) - 1)  # a master seed folded onto the LFSR's states 1..2^b-1
        super().__init__(dim, seed)
        try:
            self.config = PerturbConfig(
                strategy="otf",
                n_rngs=n_rngs,
                rng_bits=rng_bits,
                seed=seed,
                perturb_dim=dim,
                lfsr_leap=leap,
                lfsr_bit_order=bit_order,
            )
        except ValueError as exc:  # the options are called leap and bit_order here
            message = str(exc)
            raise ValueError(
                message[len("lfsr_") :] if message.startswith(("lfsr_leap", "lfsr_bit_order")) else message
            ) from None
        check_int("rng_bits", rng_bits, 3, OTF_MAX_RNG_BITS)
        if scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {scaling!r}")
        n, period = n_rngs, self.config.lfsr_period
        self.scaling = scaling
        self.start_step = n * -(-dim // (n * n))
        if self.start_step % period == 0:
            raise ValueError(
                f"n_rngs={n} and rng_bits={rng_bits} give a start step n*ceil(dim/n^2) = "
                f"{self.start_step}, a multiple of 2^rng_bits - 1 = {period}: every "
                f"perturbation of dim={dim} would be the same vector"
            )
        if _is_power_of_two(n):
            warnings.warn(
                f"n_rngs={n} is a power of two; PeZO advises 2^k - 1 (e.g. {n - 1})", PowerOfTwoWarning, stacklevel=3
            )
        if bit_order == "spread" and leap > 1 and (rng_bits - 1) % leap == 0:
            warnings.warn(
                f"bit_order='spread' with leap={leap} dividing rng_bits - 1 = {rng_bits - 1}: lanes "
                f"{(rng_bits - 1) // leap}(n - 1) apart sit {rng_bits - 1} LFSR steps apart, the spread "
                f"order's 3/8 correlation peak; choose a leap not dividing {rng_bits - 1}",
                SpreadLeapWarning,
                stacklevel=3,
            )
        repeat = near_repeat(self.config)
        if repeat["period"] < NEAR_REPEAT_MIN_PERIOD:
            warnings.warn(near_repeat_message(self.config, repeat, _OPTION_NAMES), NearRepeatWarning, stacklevel=3)
        self.msequence = msequence(self.config)
        self.lane_states = lane_states(self.config)  # = msequence for bit_order "natural"
        block = n * n
        self.chunk = min(dim, max(1, OTF_CHUNK // block) * block)
        phases = np.array(rng_phases(self.config), dtype=np.intp)
        i = np.arange(self.chunk, dtype=np.intp)
        t, p = i // n, i % n
        self._rel = leap * t + phases[(p + t) % n]  # < leap*chunk/n + P
        self._chunk_step = leap * (self.chunk // n)  # offset advance per chunk (only used when chunk % n^2 == 0)
        length = 2 * period + self._chunk_step + 1
        signed = offset_to_signed(self.lane_states.astype(np.int64), rng_bits).astype(np.float32)
        signed /= np.float32(1 << (rng_bits - 1))
        self._base = signed[np.arange(length) % period]
        self._lut = self._factors = None
        if scaling == "lut":
            self._lut = scale_lut(self.config)
        elif scaling == "exact":
            self._factors = exact_factors(self.config)
        self._tables: dict[float, np.ndarray] = {}  # scaled copies of _base (a cache, not state)

    def start_index(self, index: int) -> int:
        """m-sequence index e_t of RNG 0 at perturbation ``index``'s start: k * t * n * ceil(d/n^2) mod P."""
        return self.config.lfsr_leap * (index * self.start_step % self.config.lfsr_period) % self.config.lfsr_period

    def scale_factor(self, index: int) -> float:
        """The factor applied to perturbation ``index``: 2^k (lut), Eq. 3 (exact) or 1 (none)."""
        e = self.start_index(index)
        if self._lut is not None:
            return float(2 ** int(self._lut[self.lane_states[e]]))
        if self._factors is not None:
            return float(self._factors[e])
        return 1.0

    def scale_shift(self, index: int) -> int:
        """The LUT entry k of perturbation ``index`` (the hardware's shift), lut scaling only."""
        if self._lut is None:
            raise ValueError(f"scale_shift needs scaling='lut', got {self.scaling!r}")
        return int(self._lut[self.lane_states[self.start_index(index)]])

    def options(self):
        out = {"n_rngs": self.config.n_rngs, "rng_bits": self.config.rng_bits, "scaling": self.scaling}
        if self.config.lfsr_leap != 1:
            out["leap"] = self.config.lfsr_leap
        if self.config.lfsr_bit_order != DEFAULT_BIT_ORDER:
            out["bit_order"] = self.config.lfsr_bit_order
        return out

    def check_near_repeat(self, perturbations: int) -> dict:
        return warn_near_repeat(self.config, perturbations, _OPTION_NAMES, stacklevel=2)

    def describe(self):
        out = super().describe()
        period = self.config.lfsr_period
        out["near_repeat"] = near_repeat(self.config)
        out["start_step"] = self.start_step
        out["distinct_perturbations"] = period // math.gcd(self.start_step, period)
        return out

    def _table(self, factor: float) -> np.ndarray:
        table = self._tables.get(factor)
        if table is None:
            if len(self._tables) >= 8:
                self._tables.clear()
            table = self._base if factor == 1.0 else self._base * np.float32(factor)
            self._tables[factor] = table
        return table

    def _stream(self, index, offset, size):
        return _positional_stream(self, index, offset, size)

    def _segment(self, index, offset, size):
        e = self.start_index(index)
        table = self._table(self.scale_factor(index))
        period, chunk, step, rel = self.config.lfsr_period, self.chunk, self._chunk_step, self._rel
        out = np.empty(size, dtype=np.float32)
        j, end = offset, offset + size
        while j < end:
            c, i = divmod(j, chunk)
            count = min(chunk - i, end - j)
            start = (e + c * step) % period
            pos = j - offset
            # indices are < len(table) - start by construction; "clip" skips the per-index bounds branch
            np.take(table[start:], rel[i : i + count], out=out[pos : pos + count], mode="clip")
            j += count
        return out


class NaiveIntSampler(OtfSampler):
    """PeZO Table 3's collapsing row: the URNG array's raw b-bit integers used as z, no scaling.

    Element j of perturbation t is the signed lane value ``v = state - 2^(b-1)`` that pezo-otf reads
    (same rotation, alignment and start index ``e_t``), an integer in [-(2^(b-1) - 1), 2^(b-1) - 1]
    stored exactly in float32 (b <= 16). pezo-otf divides it by 2^(b-1) and rescales the perturbation to
    a Gaussian's norm (PeZO Eq. 3); this family does neither, which is "naively replacing the Gaussian
    random numbers with uniform ones" in hardware: |z| reaches 2^(b-1) - 1, the perturbation eps*z is
    about 2^(b-1)/sqrt(3) times MeZO's in norm, and the ZO step about 4^(b-1)/3 times (module docstring).
    Options ``n_rngs``, ``rng_bits``, ``leap``, ``bit_order`` as pezo-otf (defaults 31, 14, 1 and natural: the raw
    integers as the URNG array holds them, unlike pezo-otf's default spread); no
    ``scaling``.
    """

    family = "naive-int"

    def __init__(
        self, dim: int, seed: int = 1, n_rngs: int = 31, rng_bits: int = 14, leap: int = 1, bit_order: str = "natural"
    ):
        super().__init__(dim, seed, n_rngs=n_rngs, rng_bits=rng_bits, scaling="none", leap=leap, bit_order=bit_order)

    def scale_factor(self, index: int) -> float:
        """2^(b-1) for every perturbation: undoes pezo-otf's ``v / 2^(b-1)``, so z = v exactly."""
        return float(1 << (self.config.rng_bits - 1))

    def options(self):
        out = super().options()
        del out["scaling"]
        out.pop("bit_order", None)
        if self.config.lfsr_bit_order != "natural":  # naive-int's own default is natural
            out["bit_order"] = self.config.lfsr_bit_order
        return out


_CLASSES = {
    cls.family: cls
    for cls in (GaussianSampler, RademacherSampler, UniformSampler, NaiveIntSampler, PregenSampler, OtfSampler)
}
# The keyword options each family takes (its make_sampler options).
FAMILY_OPTIONS = {
    "gaussian": (),
    "rademacher": (),
    "uniform": (),
    "naive-int": ("n_rngs", "rng_bits", "leap", "bit_order"),
    "pezo-pregen": ("pool_size", "pool_bits"),
    "pezo-otf": ("n_rngs", "rng_bits", "scaling", "leap", "bit_order"),
}


def make_sampler(family: str, dim: int, seed: int = 1, **options) -> Sampler:
    """The sampler of one family (``FAMILIES``); ``options`` are the family's keyword options:
    pezo-pregen ``pool_size`` (4095), ``pool_bits`` (12); pezo-otf ``n_rngs`` (31), ``rng_bits`` (14),
    ``scaling`` (``"lut"``, ``"exact"`` or ``"none"``), ``leap`` (1: LFSR steps per clock,
    ``PerturbConfig.lfsr_leap``), ``bit_order`` (``"natural"`` or ``"spread"``: ``PerturbConfig.lfsr_bit_order``);
    naive-int the same without ``scaling``; the NumPy families take none."""
    if family not in _CLASSES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
    allowed = FAMILY_OPTIONS[family]
    for name in options:
        if name not in allowed:
            takes = f"takes only {', '.join(allowed)}" if allowed else "takes no options"
            raise ValueError(f"{name} is not an option of family {family!r} ({family} {takes})")
    return _CLASSES[family](dim, seed, **options)
