"""PeZO's adaptive modulus scaling for the on-the-fly strategy: exact factors and the shift LUT.

A perturbation of d values from the URNG array starts at an aligned cycle (pointer 0, so position p
holds RNG p) and takes the lanes of ``ceil(d / n)`` enabled cycles in cycle-major order: element j is
lane ``j mod n`` of relative cycle ``j // n`` (the unused lanes of the last cycle are dropped). Lane p of
relative cycle t is RNG ``(p + t) mod n`` stepped t times, and RNG k sits ``phase_k`` steps after RNG 0
along the one m-sequence, so element (t, p) is the m-sequence value at index ``e + k*t + phase_((p+t) mod n)``
(k = ``lfsr_leap``, LFSR steps per clock; the value is that index's state read in ``lfsr_bit_order``,
``lane_states``)
where e is RNG 0's index at the start. Hence ``||u||^2`` is a function of RNG 0's start state alone -- the
state on lane 0 at the start, which addresses the LUT -- and for all 2^b - 1 states at once it is the
cyclic correlation of the squared sequence values with the histogram of those offsets (FFT, float64;
the integer sums stay below 2^53 for b <= 16 and d < 2^31 up to a relative error of ~1e-12).

Real values: a lane value v (``state - 2^(b-1)``) means ``v / 2^(b-1)`` in (-1, 1). The exact factor
is ``E||z_d|| / ||u||`` (``pezo.golden.rng.pool.gaussian_expected_norm``). The LUT stores the power of two
nearest in the log domain, ``k = floor(log2(factor) + 1/2)``, clipped to ``SCALE_SHIFTS``; entry 0
(the LFSR never holds state 0) stores the most common k.
"""

from __future__ import annotations

import math

import numpy as np

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.lfsr import (
    MAX_TABLE_BITS,
    feedback_mask,
    lfsr_jump,
    msequence_table,
    offset_to_signed,
    permute_state,
)
from pezo.golden.rng.pool import gaussian_expected_norm
from pezo.golden.rng.urng import URNGArray, URNGSnapshot, rng_phases

SCALE_SHIFTS = (0, 3)
"""Range of the stored shift k (2-bit LUT entries): the perturbation is u * 2^k."""
MAX_SCALE_RNG_BITS = 16
"""Widest RNG a scale LUT is built for: 2^16 x 2 bits is 4 RAMB18; 2^17+ entries would cost BRAM
for no statistical gain (the factor's spread shrinks as the m-sequence grows)."""


def check_scalable(config: PerturbConfig) -> None:
    if config.rng_bits > MAX_SCALE_RNG_BITS:
        raise ValueError(
            f"rng_bits must be in 3..{MAX_SCALE_RNG_BITS} for the scale LUT (2^b entries), got {config.rng_bits}"
        )


def msequence(config: PerturbConfig) -> np.ndarray:
    """States of the LFSR along its period, index 0 = the master seed (uint32, length 2^b - 1): ``msequence_table``
    rotated to the seed up to ``MAX_TABLE_BITS``, stepped beyond."""
    bits, period = config.rng_bits, config.lfsr_period
    if bits <= MAX_TABLE_BITS:
        states, index = msequence_table(bits)
        return np.roll(states, -int(index[config.seed])).astype(np.uint32)
    states = np.empty(period, dtype=np.uint32)
    state, mask, top = config.seed, feedback_mask(bits), bits - 1
    for i in range(period):  # lfsr_next's step, its checks once (the config's) instead of per state
        states[i] = state
        state = (state >> 1) | (((state & mask).bit_count() & 1) << top)
    return states


def lane_states(config: PerturbConfig) -> np.ndarray:
    """What a lane shows at each m-sequence index: ``msequence`` read in ``config.lfsr_bit_order``
    (``permute_state``; the identity for ``"natural"``), uint32. Values and the LUT address use these."""
    return permute_state(msequence(config).astype(np.uint64), config.rng_bits, config.lfsr_bit_order).astype(np.uint32)


def element_offsets(config: PerturbConfig) -> np.ndarray:
    """m-sequence offset (relative to RNG 0's start index) of every element j < d of a perturbation."""
    n, d, period = config.n_rngs, config.perturb_dim, config.lfsr_period
    phases = np.array(rng_phases(config), dtype=np.int64)
    j = np.arange(d, dtype=np.int64)
    t, p = j // n, j % n
    return (config.lfsr_leap * t + phases[(p + t) % n]) % period


def squared_norms(config: PerturbConfig) -> np.ndarray:
    """``||u||^2`` in integer lane units for every start index e (length 2^b - 1), via FFT."""
    check_scalable(config)
    period = config.lfsr_period
    values = offset_to_signed(lane_states(config).astype(np.uint64), config.rng_bits).astype(np.float64)
    counts = np.bincount(element_offsets(config), minlength=period).astype(np.float64)
    # c[e] = sum_o counts[o] * values[(e + o) mod P]^2  (cyclic cross-correlation)
    spectrum = np.conj(np.fft.rfft(counts)) * np.fft.rfft(values * values)
    return np.rint(np.fft.irfft(spectrum, n=period))


def exact_factors(config: PerturbConfig) -> np.ndarray:
    """E||z_d|| / ||u|| for every start index e, u in real units (lane / 2^(b-1))."""
    norms = np.sqrt(squared_norms(config)) / (1 << (config.rng_bits - 1))
    return gaussian_expected_norm(config.perturb_dim) / norms


def round_log2(factors: np.ndarray) -> np.ndarray:
    """Nearest power of two in the log domain, clipped: k = clip(floor(log2 f + 1/2), SCALE_SHIFTS)."""
    return np.clip(np.floor(np.log2(factors) + 0.5), *SCALE_SHIFTS).astype(np.int64)


def scale_lut(config: PerturbConfig) -> np.ndarray:
    """The 2^b-entry LUT: entry s = k for the perturbation whose lane 0 shows s at its start (the state in
    ``lfsr_bit_order``)."""
    shifts = round_log2(exact_factors(config))
    lut = np.full(1 << config.rng_bits, np.bincount(shifts).argmax(), dtype=np.int64)
    lut[lane_states(config)] = shifts
    return lut


def lut_statistics(config: PerturbConfig) -> dict:
    """How well the power-of-two LUT approximates the exact factor (for reports and docs)."""
    factors = exact_factors(config)
    shifts = round_log2(factors)
    unclipped = np.floor(np.log2(factors) + 0.5)
    ratio = np.exp2(shifts) / factors  # applied / exact
    return {
        "factor_min": float(factors.min()),
        "factor_max": float(factors.max()),
        "factor_mean": float(factors.mean()),
        "shift_histogram": {int(k): int(c) for k, c in zip(*np.unique(shifts, return_counts=True))},
        "clipped_fraction": float(np.mean(unclipped != shifts)),
        "norm_ratio_mean": float(ratio.mean()),
        "norm_ratio_min": float(ratio.min()),
        "norm_ratio_max": float(ratio.max()),
        "lut_entries": 1 << config.rng_bits,
        "lut_bits": 2 * (1 << config.rng_bits),
        "expected_gaussian_norm": gaussian_expected_norm(config.perturb_dim),
        "log2_rounding": "nearest in the log domain, k = floor(log2(f) + 1/2)",
    }


def direct_squared_norm(config: PerturbConfig, start_index: int) -> int:
    """``||u||^2`` of the perturbation whose RNG 0 starts at m-sequence index ``start_index``, by running
    the golden URNG array (the slow independent check of ``squared_norms``)."""
    n, d = config.n_rngs, config.perturb_dim
    state0 = lfsr_jump(config.seed, config.rng_bits, start_index)
    states = tuple(lfsr_jump(state0, config.rng_bits, phase) for phase in rng_phases(config))
    array = URNGArray(config)
    array.load(URNGSnapshot(states, 0))
    lanes, _ = array.run(math.ceil(d / n))
    u = lanes.reshape(-1)[:d]
    return int(np.dot(u, u))


class ScaleLUTReader:
    """Cycle model of ``hw.rng.scale.ScaleLUT``: ``shift`` is the entry read on the last edge with ``read``
    (None before the first read: a BRAM output register has no defined reset value)."""

    def __init__(self, config: PerturbConfig, lut: np.ndarray | None = None):
        self.config = config
        self.lut = scale_lut(config) if lut is None else lut
        self.shift = None

    def step(self, state: int, read: bool) -> None:
        if read:
            self.shift = int(self.lut[state])
