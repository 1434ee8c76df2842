"""INT8 arithmetic of the PE array (twin of ``hw.engine.pe_array``): the NITI number format.

A tensor is an integer array plus one power-of-two exponent per tensor: value = q * 2^e (NITI,
ElasticZO-INT8). Rules, one per operation, used by the hardware bit for bit:

* **Saturation** -- weights and requantised outputs: symmetric [-127, 127] (``WEIGHT_MIN..WEIGHT_MAX``;
  the negation of a weight never overflows, so the -epsilon pass mirrors the +epsilon pass);
  activations (inputs): the full int8 range [-128, 127] (``ACT_MIN..ACT_MAX``).
* **Quantisation** (float -> int8, host side only): ``q = sat(floor(x * 2^-e + 1/2))`` -- round half up.
  The exponent of a tensor is NITI's ``ceil(log2(max|x|)) - 7`` (``exponent_for``).
* **Products and accumulation**: int8 x int8 -> int16 products, summed exactly in int32. An int32
  accumulator cannot overflow while ``inputs * 128 * 127 < 2^31`` (``MAX_INPUTS``).
* **Requantisation** (int32 -> int8): ``sat(round_shift(acc, s), -127, 127)``, with
  ``round_shift(x, s) = floor((x + 2^(s-1)) / 2^s)`` for s > 0 (arithmetic shift, round half up: ties go
  towards +infinity, so -2.5 -> -2 and 2.5 -> 3) and x for s = 0.
"""

from __future__ import annotations

import math

import numpy as np

from pezo.golden.rounding import SHIFT_RANGE, round_half_up, round_shift  # noqa: F401 (part of this API)

WEIGHT_MIN, WEIGHT_MAX = -127, 127
ACT_MIN, ACT_MAX = -128, 127
ACC_BITS = 32
MAX_INPUTS = ((1 << (ACC_BITS - 1)) - 1) // (128 * 127)
"""Largest dot-product length whose int32 accumulator cannot overflow (132 104)."""


def saturate(x, lo: int, hi: int) -> np.ndarray:
    """Clamp an integer array to [lo, hi] (int64)."""
    return np.clip(np.asarray(x, dtype=np.int64), lo, hi)


def requantize(acc, shift: int) -> np.ndarray:
    """int32 accumulator -> int8: sat(round_shift(acc, shift), -127, 127)."""
    return saturate(round_shift(acc, shift), WEIGHT_MIN, WEIGHT_MAX)


def exponent_for(x) -> int:
    """NITI's per-tensor exponent: ceil(log2(max|x|)) - 7 (so max|x| maps to at most 128 LSB)."""
    peak = float(np.max(np.abs(np.asarray(x, dtype=np.float64))))
    if not math.isfinite(peak) or peak == 0:
        raise ValueError(f"tensor must have a finite non-zero peak to choose an exponent, got max|x| = {peak}")
    return math.ceil(math.log2(peak)) - 7


def quantize(x, exponent: int, lo: int = ACT_MIN, hi: int = ACT_MAX) -> np.ndarray:
    """float -> int8 at ``exponent``: sat(floor(x * 2^-exponent + 1/2), lo, hi) (int64)."""
    x = np.asarray(x, dtype=np.float64)
    return saturate(round_half_up(np.ldexp(x, -int(exponent))), lo, hi)


def check_int8(name: str, x, lo: int = ACT_MIN, hi: int = ACT_MAX) -> np.ndarray:
    """``x`` as int64 if every entry is an integer in [lo, hi], else one ValueError naming ``name``."""
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer array with entries in {lo}..{hi}, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if a.size and (a.min() < lo or a.max() > hi):
        raise ValueError(f"{name} entries must be in {lo}..{hi}, got {int(a.min())}..{int(a.max())}")
    return a


def matmul(x, w) -> np.ndarray:
    """int32 accumulators ``acc[b, o] = sum_k x[b, k] * w[o, k]`` (exact; int64 array).

    x: [B, K] int8 activations, w: [O, K] int8 weights, K <= MAX_INPUTS."""
    x = check_int8("x", x)
    w = check_int8("w", w)
    if x.shape[-1] != w.shape[-1]:
        raise ValueError(f"x has {x.shape[-1]} inputs but w has {w.shape[-1]}")
    if x.shape[-1] > MAX_INPUTS:
        raise ValueError(f"inputs must be in 1..{MAX_INPUTS} (int32 accumulation), got {x.shape[-1]}")
    return exact_matmul(x, w)


def exact_matmul(x, w) -> np.ndarray:
    """``x @ w.T`` of integer arrays whose every partial sum of products stays below 2^53 in magnitude (int8
    operands and K <= ``MAX_INPUTS``: below 2^31), as int64, computed in float64 by BLAS: every product and every
    partial sum is then an integer float64 represents exactly, in any summation order, so the result is the
    integer product bit for bit (no checks: the callers' operands are checked int8)."""
    return (np.asarray(x, dtype=np.float64) @ np.asarray(w, dtype=np.float64).T).astype(np.int64)


# -- NITI's per-tensor rules (dynamic exponents: ElasticZO-INT8's backward, the engine's backprop tail) ------
ACC_LIMIT = 1 << 31
BITS_RANGE = (1, 15)
"""Bits ``pseudo_stochastic_round`` rounds to."""


def int_array(name: str, x) -> np.ndarray:
    """``x`` as int64 if it is an integer array, else a ValueError naming ``name``."""
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer array, got dtype {a.dtype}")
    return a.astype(np.int64)


def int_scalar(name: str, v, lo: int | None = None, hi: int | None = None) -> int:
    """``v`` as an int if it is an integer in [lo, hi] (either bound optional), else a ValueError."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    v = int(v)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{name} must be in {lo}..{hi}, got {v}")
    return v


def acc_array(name: str, x) -> np.ndarray:
    """``x`` as int64 if it is an integer array with |x| <= 2^31 (an int32 accumulator), else a ValueError."""
    a = int_array(name, x)
    if a.size and int(np.max(np.abs(a))) > ACC_LIMIT:
        raise ValueError(f"{name} must be an int32 accumulator (|{name}| <= 2^31), got max {int(np.max(np.abs(a)))}")
    return a


def bitwidth(x) -> int:
    """floor(log2(max|x|)) + 1 (32 - clz), 0 for an all-zero (or empty) tensor."""
    a = int_array("x", x)
    return int(np.max(np.abs(a))).bit_length() if a.size else 0


def requantize_tensor(acc, exponent: int) -> tuple[np.ndarray, int]:
    """NITI requantisation of an int32 tensor: b = ``bitwidth(acc)``; b <= 7 returns (acc, exponent)
    unchanged, else (sat(round_shift(acc, b - 7), -127, 127), exponent + b - 7) (round half up)."""
    acc = acc_array("acc", acc)
    exponent = int_scalar("exponent", exponent)
    b = bitwidth(acc)
    if b <= 7:
        return acc, exponent
    return requantize(acc, b - 7), exponent + b - 7


def pseudo_stochastic_round(x, bits: int) -> np.ndarray:
    """NITI's PstoShift to ``bits`` bits, sign-magnitude form, deterministic: shift = ``bitwidth(x)`` - bits;
    shift < 1 returns x; else |x| = q 2^shift + r, the upper shift - h bits of r (h = shift >> 1) are
    compared with its lower h bits (doubled for an odd shift) and q grows by one when the upper part is
    larger; the sign is re-applied and the result saturated to [-127, 127]. psr(-x) == -psr(x) (NITI's
    reference code floors negative values instead), and max|x| = 1 passes unchanged."""
    bits = int_scalar("bits", bits, *BITS_RANGE)
    x = acc_array("x", x)
    shift = bitwidth(x) - bits
    if shift < 1:
        return x
    m = np.abs(x)
    q = m >> shift
    r = m & ((1 << shift) - 1)
    h = shift >> 1
    hi = r >> h
    lo = (r & ((1 << h) - 1)) << (shift & 1)
    return np.clip(np.sign(x) * (q + (hi > lo)), WEIGHT_MIN, WEIGHT_MAX)
