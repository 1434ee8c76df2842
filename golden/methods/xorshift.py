"""Marsaglia's XORShift32 (a, b, c) = (13, 17, 5): the Poor Man's paper's perturbation generator.

Appendix C of "Poor Man's Training on MCUs" draws one 32-bit word per perturbed element from::

    state ^= state << 13;  state ^= state >> 17;  state ^= state << 5;  return state;

on an ``unsigned int`` (so every left shift is taken modulo 2^32), and maps the word to a Rademacher
value by its least significant bit: LSB 1 -> -1, LSB 0 -> +1. Output number 1 is the state after one
step from the seed; the seed itself is never returned. Seed 0 is a fixed point (all outputs 0, all
values +1), so seeds are restricted to 1..2^32-1; over those the generator has full period 2^32 - 1.

Vectorisation. Each of the three steps is linear over GF(2), so one generator step is a 32x32 bit
matrix T and k steps are T^k. ``xorshift32`` splits its output into about sqrt(count) contiguous
lanes of m words, jumps each lane's start state ahead with T^m (T^(2^i) are cached, T^m is built by
squaring and cached per m), and then advances all lanes together with NumPy uint32 shifts and XORs
(NumPy drops the bits shifted out of a uint32, which is the 32-bit mask). The result equals the
plain loop ``xorshift32_reference`` bit for bit; the same jump gives random access (``skip``).
"""

from __future__ import annotations

import math
from functools import cache, lru_cache

import numpy as np

from pezo.golden.config import check_int
from pezo.golden.zo.families import MAX_INDEX, Sampler

MASK32 = 0xFFFFFFFF
PERIOD = MASK32  # 2^32 - 1: every nonzero state is visited once
SHIFTS = (13, 17, 5)
MAX_COUNT = PERIOD
"""Largest ``count`` accepted: one full period."""
MAX_SKIP = MAX_INDEX


def check_seed(seed) -> int:
    """``seed`` as an int if it is an integer in 1..2^32-1, else one ValueError (0 is a fixed point)."""
    if isinstance(seed, np.integer):
        seed = int(seed)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer in 1..2^32-1, got {seed!r}")
    if not 1 <= seed <= MASK32:
        raise ValueError(f"seed must be in 1..2^32-1 (0 is a fixed point of xorshift32), got {seed}")
    return seed


def _check_count(name: str, value, hi: int) -> int:
    """``check_int(name, value, 0, hi)`` that also accepts NumPy integers."""
    if isinstance(value, np.integer):
        value = int(value)
    return check_int(name, value, 0, hi)


def xorshift32_step(state: int) -> int:
    """One step of the 32-bit masked recurrence (the Appendix C ``xor_rand`` body)."""
    state ^= (state << 13) & MASK32
    state ^= state >> 17
    state ^= (state << 5) & MASK32
    return state


def xorshift32_reference(seed: int, count: int) -> list[int]:
    """The first ``count`` outputs after ``seed``, by the plain Python loop: the specification."""
    state = check_seed(seed)
    count = _check_count("count", count, MAX_COUNT)
    out = []
    for _ in range(count):
        state = xorshift32_step(state)
        out.append(state)
    return out


# -- GF(2) jump-ahead ---------------------------------------------------------------------------------
# A 32x32 bit matrix is a tuple of 32 columns: column i is the image of the state 1 << i.


def _apply(matrix: tuple[int, ...], state: int) -> int:
    out = 0
    while state:
        low = state & -state
        out ^= matrix[low.bit_length() - 1]
        state ^= low
    return out


def _compose(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The matrix of ``a`` after ``b``."""
    return tuple(_apply(a, column) for column in b)


STEP_MATRIX: tuple[int, ...] = tuple(xorshift32_step(1 << i) for i in range(32))
"""T: one generator step as a GF(2) matrix (columns = images of the unit states)."""
IDENTITY: tuple[int, ...] = tuple(1 << i for i in range(32))


@cache
def _power_of_two(k: int) -> tuple[int, ...]:
    """T^(2^k)."""
    if k == 0:
        return STEP_MATRIX
    half = _power_of_two(k - 1)
    return _compose(half, half)


@lru_cache(maxsize=256)
def jump_matrix(steps: int) -> tuple[int, ...]:
    """T^steps as 32 columns (``steps`` >= 0), built from the cached squares T^(2^k)."""
    steps = _check_count("steps", steps, MAX_SKIP)
    out, k = IDENTITY, 0
    while steps:
        if steps & 1:
            out = _compose(_power_of_two(k), out)
        steps >>= 1
        k += 1
    return out


def xorshift32_jump(state: int, steps: int) -> int:
    """The state ``steps`` generator steps after ``state`` (any 32-bit state, 0 stays 0)."""
    state = _check_count("state", state, MASK32)
    steps = _check_count("steps", steps, MAX_SKIP)
    k = 0
    while steps:  # T^steps = product of the cached T^(2^k), applied to the vector (no matrix products)
        if steps & 1:
            state = _apply(_power_of_two(k), state)
        steps >>= 1
        k += 1
    return state


def xorshift32(seed: int, count: int, skip: int = 0) -> np.ndarray:
    """uint32 outputs ``skip + 1..skip + count`` after ``seed`` (``skip=0``: the first ``count``).

    Equal bit for bit to ``xorshift32_reference(seed, skip + count)[skip:]``; vectorised over about
    sqrt(count) lanes whose start states come from the GF(2) jump matrix (module docstring).
    """
    seed = check_seed(seed)
    count = _check_count("count", count, MAX_COUNT)
    skip = _check_count("skip", skip, MAX_SKIP)
    if count == 0:
        return np.empty(0, dtype=np.uint32)
    lanes = max(1, math.isqrt(count))
    length = -(-count // lanes)  # words per lane
    lanes = -(-count // length)  # drop lanes that would start past the end
    jump = jump_matrix(length)
    starts = [xorshift32_jump(seed, skip) if skip else seed]
    for _ in range(lanes - 1):
        starts.append(_apply(jump, starts[-1]))
    state = np.array(starts, dtype=np.uint32)
    block = np.empty((length, lanes), dtype=np.uint32)
    a, b, c = (np.uint32(s) for s in SHIFTS)
    for k in range(length):
        state ^= state << a
        state ^= state >> b
        state ^= state << c
        block[k] = state
    return block.T.reshape(-1)[:count]


def rademacher(seed: int, count: int, skip: int = 0) -> np.ndarray:
    """int8 Rademacher values of outputs ``skip + 1..skip + count``: LSB 1 -> -1, LSB 0 -> +1."""
    bits = (xorshift32(seed, count, skip) & np.uint32(1)).astype(np.int8)
    return 1 - 2 * bits


# -- sampler ------------------------------------------------------------------------------------------
_GAMMA = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """SplitMix64's output for state ``x``: add the golden gamma, then Stafford's mix 13 (64-bit)."""
    z = (x + _GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def stream_seed(seed: int, index: int) -> int:
    """The nonzero XORShift32 seed of perturbation ``index``.

    ``z = splitmix64((seed * 2^32 + index) mod 2^64)``, folded to 32 bits as ``(z ^ (z >> 32)) mod 2^32``,
    with 0 mapped to 1. Distinct (seed, index) with index < 2^32 give distinct 64-bit keys; the fold
    has 2^32 - 1 outcomes, so two perturbations share a stream with probability about 2^-32.
    """
    z = splitmix64(((seed << 32) + index) & MASK64)
    folded = (z ^ (z >> 32)) & MASK32
    return folded or 1


class XorShiftRademacherSampler(Sampler):
    """Poor Man's Appendix C perturbations: element j of perturbation ``index`` is the Rademacher value
    of draw j + 1 of the XORShift32 stream seeded with ``stream_seed(seed, index)`` (one draw per
    element, in element order). A segment jumps the stream ahead to its offset with the GF(2) jump
    matrix, so it costs O(size + log offset) and is exactly the slice of the whole perturbation
    (unlike the NumPy families, the values do not depend on the partition). ``seed`` in 1..2^32-1.
    """

    family = "xorshift-rademacher"
    _SIGNS = np.array([1.0, -1.0], dtype=np.float32)

    def __init__(self, dim: int, seed: int = 1):
        super().__init__(dim, check_seed(seed))

    def stream_seed(self, index: int) -> int:
        """The XORShift32 seed of perturbation ``index``."""
        return stream_seed(self.seed, _check_count("index", index, MAX_INDEX))

    def _segment(self, index, offset, size):
        bits = xorshift32(stream_seed(self.seed, index), size, skip=offset) & np.uint32(1)
        return np.take(self._SIGNS, bits)
