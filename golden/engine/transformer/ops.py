"""Integer kernels of the transformer encoder layer (issue 55), bit-exact by definition.

The number format is the engine's (``pezo.golden.engine.int8``): a tensor is integers plus one power-of-two
exponent, value = q * 2^e. Every rule below is integer-only; floats appear only where a *table* is built
(once, on the host, from ``exp`` or ``erf``) and in the float references the tests compare with.

* **Division with rounding** ``round_div(n, d)`` (d > 0) = floor((2n + d) / (2d)): n / d rounded half up.
* **Integer square root** ``isqrt(n)`` = floor(sqrt(n)) exactly, for 0 <= n < 2^62 (the unit: a restoring
  bitwise square root, one result bit per cycle; golden: a float64 seed corrected by integer comparisons).
* **Softmax** ``int_softmax(s, mask, table)``, s the scores at exponent e_s (int16: |s| <= 32 767), mask 1 = a
  real key. Per row: m = max of s over the real keys; z = m - s (>= 0); E = table[min(z, N - 1)] for real keys,
  0 for masked ones (masked keys are excluded exactly: they add nothing to the sum and get P = 0);
  S = sum(E) (< 2^31 for up to 65 535 keys); r = floor(2^RECIP_BITS / S), one reciprocal per row;
  P = min(round_shift(E * r, RECIP_BITS - 7), 127): probabilities in int8 at exponent -7 (1.0 saturates to 127).
  A row whose keys are all masked gets P = 0. The table (``exp_table``): N = a power of two, table[k] =
  round_half_up(2^EXP_BITS * exp(-k 2^e_s)), the last entry forced to 0; E of the row maximum is 2^EXP_BITS, so
  S >= 2^15, r <= 2^23 and E * r <= 2^38. Error (``tests/golden/test_int_transformer.py``): |P / 128 - p| <=
  1/256 + 2^-13 below the saturation at 127/128 (p the float softmax of the same integer scores).
* **GELU** ``int_gelu(q, table)``: a 256-entry table on the int8 input, table[q + 128] =
  sat(round_half_up(gelu(q 2^e_in) 2^-e_out), -127, 127), gelu(x) = x (1 + erf(x / sqrt 2)) / 2 (exact erf):
  exact by construction (error <= 1/2 LSB of the output, at the rails the saturation).
* **LayerNorm** ``int_layer_norm(y, gamma, beta, ...)`` on an int32 row y of d values: the centred row scaled by d,
  c = d y - sum(y), exact (no rounded mean; |c| < 2^(32 + log2 d), a 48-bit value for d <= 2^15); the row's own
  pre-shift p = bitwidth(c) - 15 (bitwidth = 32 - clz of the row's max |c|), c' = round_shift(c, p) for p > 0 and
  c << -p for p <= 0 (exact), so 2^14 <= max |c'| <= 2^15 in every row that is not constant;
  var = floor(sum(c'^2) / d) (sum < d 2^30, a 48-bit accumulator for d <= 2^17); sigma = max(isqrt(var), 1)
  (>= 2^14 / sqrt(d) - 1); r = floor(2^LN_RECIP_BITS / sigma); out = sat(round_shift(c' gamma r,
  LN_RECIP_BITS - e_gamma + e_out) + beta, -127, 127), gamma int8 at e_gamma, beta int32 at e_out.
  |c' gamma r| < 2^15 * 127 * 2^24 < 2^46. The scale of y cancels (its exponent is not an input); eps (1e-12 in
  MiniLM) is below one LSB of var and is dropped. A constant row gives beta.
* **Residual add** ``residual_add(a, e_a, b, e_b)``: both operands shifted *left* to the smaller exponent
  (exact) and added, saturated to the int32 rails; the result's exponent is min(e_a, e_b).
* **Mean pooling** ``mean_pool(q, mask, shift)``: sat(round_div(2^shift * sum of q over the real tokens, count),
  -127, 127): the int8 mean at exponent e_q - shift (a mean is smaller than its tokens, so it may take a finer
  exponent; a text with no real token is a ValueError).
"""

from __future__ import annotations

import math

import numpy as np

from pezo.golden.engine.int8 import WEIGHT_MAX, WEIGHT_MIN, int_array, round_half_up, round_shift, saturate

EXP_BITS = 15
"""exp(0) = 2^15 in the softmax's exp table."""
RECIP_BITS = 38
"""The softmax's reciprocal r = floor(2^38 / S); P = round_shift(E r, 31)."""
PROB_EXPONENT = -7
PROB_MAX = 127
SCORE_MAX = (1 << 15) - 1
"""Scores enter the softmax as int16 (saturated to +-32 767 by their requantisation)."""
LN_BITS = 15
"""LayerNorm's centred row is shifted down to |c'| <= 2^15."""
LN_RECIP_BITS = 24
"""LayerNorm's reciprocal r = floor(2^24 / sigma)."""
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
GELU_ENTRIES = 256


def round_div(n, d) -> np.ndarray:
    """floor((2n + d) / (2d)) for d > 0: n / d rounded half up (int64)."""
    n = np.asarray(n, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    if np.any(d <= 0):
        raise ValueError("round_div needs a positive divisor")
    return (2 * n + d) // (2 * d)


def isqrt(n) -> np.ndarray:
    """floor(sqrt(n)) exactly for integers 0 <= n < 2^62 (int64)."""
    n = np.asarray(n, dtype=np.int64)
    if np.any(n < 0) or np.any(n >= 1 << 62):
        raise ValueError("isqrt needs integers in 0..2^62 - 1")
    s = np.floor(np.sqrt(n.astype(np.float64))).astype(np.int64)
    for _ in range(2):  # the float64 seed is within 1 of the root for n < 2^62
        s = np.where(s * s > n, s - 1, s)
        s = np.where((s + 1) * (s + 1) <= n, s + 1, s)
    return s


def exp_table(score_exponent: int, entries: int | None = None) -> np.ndarray:
    """The softmax's exp table at scores of exponent ``score_exponent``: table[k] = round(2^15 exp(-k 2^e_s)),
    ``entries`` (default: the smallest power of two past the last non-zero entry) long, the last entry 0."""
    step = math.ldexp(1.0, int(score_exponent))
    k = np.arange(1 << 20, dtype=np.float64)
    values = round_half_up(np.ldexp(np.exp(-k * step), EXP_BITS))
    last = int(np.nonzero(values)[0][-1])
    if entries is None:
        entries = 1 << (last + 1).bit_length()
    if entries < 2:
        raise ValueError(f"the exp table needs at least 2 entries, got {entries}")
    table = values[:entries].copy()
    table[-1] = 0
    return table


def _mask_array(mask, shape_last: int) -> np.ndarray:
    m = np.asarray(mask)
    if m.shape[-1] != shape_last:
        raise ValueError(f"mask has {m.shape[-1]} keys but the scores have {shape_last}")
    if m.size and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask entries must be 0 (padding) or 1 (a real token)")
    return m.astype(bool)


def int_softmax(scores, mask, table: np.ndarray) -> np.ndarray:
    """Integer softmax over the last axis (the module docstring's rule): int8 P at exponent -7.

    scores: int [..., T] at the table's exponent (|s| <= 32 767); mask: 0/1 broadcastable to scores, its last
    axis the keys."""
    s = int_array("scores", scores)
    if s.size and int(np.max(np.abs(s))) > SCORE_MAX:
        raise ValueError(f"scores must be int16 (|s| <= {SCORE_MAX}), got max {int(np.max(np.abs(s)))}")
    real = np.broadcast_to(_mask_array(mask, s.shape[-1]), s.shape)
    table = int_array("table", table)
    low = np.iinfo(np.int64).min
    m = np.max(np.where(real, s, low), axis=-1, keepdims=True)
    z = np.where(real, m - s, 0)
    e = np.where(real, table[np.minimum(z, len(table) - 1)], 0)
    total = e.sum(axis=-1, keepdims=True)
    r = np.where(total > 0, (1 << RECIP_BITS) // np.maximum(total, 1), 0)
    return np.minimum(round_shift(e * r, RECIP_BITS + PROB_EXPONENT), PROB_MAX)


def gelu_float(x) -> np.ndarray:
    """x (1 + erf(x / sqrt 2)) / 2 in float64 (exact erf)."""
    from scipy.special import erf

    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_table(in_exponent: int, out_exponent: int) -> np.ndarray:
    """table[q + 128] = sat(round_half_up(gelu(q 2^e_in) 2^-e_out), -127, 127) for q = -128..127."""
    q = np.arange(-128, 128, dtype=np.float64)
    y = gelu_float(np.ldexp(q, int(in_exponent)))
    return saturate(round_half_up(np.ldexp(y, -int(out_exponent))), WEIGHT_MIN, WEIGHT_MAX)


def int_gelu(q, table: np.ndarray) -> np.ndarray:
    """The GELU table looked up at int8 ``q`` (entries -128..127)."""
    q = int_array("q", q)
    if q.size and (q.min() < -128 or q.max() > 127):
        raise ValueError(f"GELU inputs must be int8, got {int(q.min())}..{int(q.max())}")
    table = int_array("table", table)
    if table.shape != (GELU_ENTRIES,):
        raise ValueError(f"the GELU table must have {GELU_ENTRIES} entries, got shape {table.shape}")
    return table[q + 128]


def _bitwidth_rows(c: np.ndarray) -> np.ndarray:
    """Per row (last axis): bit_length of max |c| (0 for an all-zero row)."""
    peak = np.max(np.abs(c), axis=-1, keepdims=True)
    bits = np.zeros_like(peak)
    while np.any(peak >> bits):
        bits = bits + ((peak >> bits) > 0)
    return bits


def int_layer_norm(y, gamma, beta, gamma_exponent: int, out_exponent: int) -> np.ndarray:
    """Integer LayerNorm over the last axis (the module docstring's rule): int8 at ``out_exponent``.

    y: int32 [..., d]; gamma: int8 [d] at ``gamma_exponent``; beta: int32 [d] at ``out_exponent``."""
    y = int_array("y", y)
    if y.size and (y.min() < INT32_MIN or y.max() > INT32_MAX):
        raise ValueError("LayerNorm inputs must be int32")
    d = y.shape[-1]
    gamma = int_array("gamma", gamma)
    beta = int_array("beta", beta)
    if gamma.shape != (d,) or beta.shape != (d,):
        raise ValueError(f"gamma and beta must have shape ({d},), got {gamma.shape} and {beta.shape}")
    shift = LN_RECIP_BITS - int(gamma_exponent) + int(out_exponent)
    if not 0 <= shift <= 31:
        raise ValueError(
            f"LayerNorm output shift {LN_RECIP_BITS} - e_gamma ({gamma_exponent}) + e_out ({out_exponent}) = "
            f"{shift} must be in 0..31"
        )
    c = d * y - y.sum(axis=-1, keepdims=True)  # d (y - mean), exact
    pre = _bitwidth_rows(c) - LN_BITS
    down = np.maximum(pre, 0)
    half = np.where(down > 0, np.left_shift(1, np.maximum(down - 1, 0)), 0)
    c = ((c + half) >> down) << np.maximum(-pre, 0)
    var = (c * c).sum(axis=-1, keepdims=True) // d
    sigma = np.maximum(isqrt(var), 1)
    r = (1 << LN_RECIP_BITS) // sigma
    out = round_shift(c * gamma * r, shift) + beta
    return saturate(out, WEIGHT_MIN, WEIGHT_MAX)


def layer_norm_float(x, gamma, beta, eps: float = 1e-12) -> np.ndarray:
    """The float64 LayerNorm the integer one approximates."""
    x = np.asarray(x, dtype=np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


def residual_add(a, a_exponent: int, b, b_exponent: int) -> tuple[np.ndarray, int]:
    """(a 2^(e_a - e) + b 2^(e_b - e), e) with e = min(e_a, e_b): exact left shifts, saturated to int32."""
    a = int_array("a", a)
    b = int_array("b", b)
    e = min(int(a_exponent), int(b_exponent))
    da, db = int(a_exponent) - e, int(b_exponent) - e
    if max(da, db) > 31:
        raise ValueError(f"residual exponents {a_exponent} and {b_exponent} are more than 31 apart")
    return saturate((a << da) + (b << db), INT32_MIN, INT32_MAX), e


def mean_pool(q, mask, shift: int = 0) -> np.ndarray:
    """sat(round_div(2^shift sum over the real tokens, count), -127, 127): q [B, T, d] int8, mask [B, T] 0/1 ->
    [B, d] int8 at exponent e_q - shift (shift in 0..31)."""
    if isinstance(shift, bool) or not isinstance(shift, (int, np.integer)) or not 0 <= shift <= 31:
        raise ValueError(f"the pooling shift must be an integer in 0..31, got {shift!r}")
    q = int_array("q", q)
    m = _mask_array(mask, q.shape[-2]).astype(np.int64)
    count = m.sum(axis=-1)
    if np.any(count == 0):
        raise ValueError("every text needs at least one real token to pool")
    total = (q * m[..., None]).sum(axis=-2) << int(shift)
    return saturate(round_div(total, count[..., None]), WEIGHT_MIN, WEIGHT_MAX)


def softmax_float(scores, mask) -> np.ndarray:
    """float64 softmax over the last axis with the masked keys excluded (all-masked rows: 0)."""
    s = np.asarray(scores, dtype=np.float64)
    real = np.broadcast_to(_mask_array(mask, s.shape[-1]), s.shape)
    m = np.max(np.where(real, s, -np.inf), axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(real, np.exp(s - m), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)
