"""numba kernels of the golden LM (MiniLM): erf32's erf, the GELU, LayerNorm and the attention's masked max shift,
each the NumPy passes' float operations in one compiled loop.

Contract: bit for bit what the NumPy passes give.

* ``erf(z, out)`` (1-D contiguous float32): writes into ``out`` what ``erf32.Float32Erf`` writes
  (``scipy.special.erf(z)``).
* ``gelu(x)`` (1-D contiguous float32, any length; ``x`` may be a part of a larger array, no scratch is shared, so
  threads may run parts at once): rewrites ``x`` in place as ``minilm``'s NumPy GELU passes do
  (``z = x * float32(1 / sqrt 2)``, ``e = erf(z) + 1``, ``x = x * e * 0.5`` in float32). Inside, the kernels
  ``erf_into`` / ``gelu_into`` do every value whose erf needs no SciPy and return the indices of the others (erf32's
  rounding check or a non-finite cubic, about one in 4 000), which the wrappers finish with SciPy and the same
  float32 operations.
* ``bias_gelu(y, bias)`` (C-contiguous float32 rows [N, M], bias [M]): ``y += bias`` then ``gelu``, in place.
* ``layer_norm(x, weight, bias, eps)`` (float32, over the last axis): ``minilm.layer_norm``'s NumPy passes as a
  new array: the two means are NumPy's (its pairwise float32 sum of a contiguous row, that sum divided by the
  row length in float64 and rounded), the rest the same float32 operations in order. ``add_layer_norm(x,
  linear_bias, residual, ...)`` (C-contiguous [N, H]): ``x += linear_bias; x += residual`` then ``layer_norm``,
  into ``x`` (a linear's bias add and the residual add fused in).
* ``softmax_rows(scores, mask_add)`` (scores [B, heads, T, U] C-contiguous float32, mask_add [B, U]): minilm's
  attention softmax in place. Its kernel ``masked_shift`` does ``scores += mask_add[:, None, None, :]; scores
  -= scores.max(axis=-1, keepdims=True)``: the row maximum is NumPy's (NaN if the row has one); only the sign of
  a zero maximum may differ, which changes no value but a zero difference's sign, and ``exp`` of either zero is
  1, so the softmax is bit for bit the same. ``exp`` and the row-sum division stay NumPy's.

Bit for bit because the kernels run the same IEEE operations in the same order and widths as the NumPy passes:
the float32 products and sums rounded to float32, erf32's cubic in float64 by Horner with separate multiplies
and adds (numba's default: no fastmath, so LLVM contracts nothing into FMAs), the same segment index and the
same rounding check on the double's bit pattern, with the coefficients ``erf32.coefficients()`` (as one array,
segment by segment ``c0, c1, c2, c3``). Importing this module needs numba (the ``fast`` extra); the kernels compile on
first use (about 3 s for all of them) and cache the machine code (``cache=True``: ``__pycache__`` beside this file, else
numba's user-wide cache directory or ``NUMBA_CACHE_DIR``). ``pezo.golden.lm.jit`` decides whether they are used
and falls back to the NumPy passes when numba is missing, disabled or fails.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic
from scipy import special

from pezo.golden.lm.erf32 import _CHECK_OFFSET, _DROPPED, MARGIN, SHIFT, coefficients

INV_SQRT2 = np.float32(1 / math.sqrt(2))
"""float32(1 / sqrt 2), the GELU's scale (minilm's ``_INV_SQRT2``)."""
_EXPONENT = np.int64(0x7FF0 << 48)
_BLOCK = 256  # gelu_into's values per block: its cubic scratch stays in L1
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)


@intrinsic
def _float32_bits(typingctx, value):
    """The bit pattern of a float32 as uint32 (NumPy's ``view(np.uint32)``)."""
    if value != types.float32:
        return None
    return types.uint32(types.float32), lambda context, builder, sig, args: builder.bitcast(args[0], ir.IntType(32))


@intrinsic
def _float64_bits(typingctx, value):
    """The bit pattern of a float64 as int64 (NumPy's ``view(np.int64)``)."""
    if value != types.float64:
        return None
    return types.int64(types.float64), lambda context, builder, sig, args: builder.bitcast(args[0], ir.IntType(64))


@numba.njit(inline="always")
def _cubic(z, table):
    """erf32's per-segment cubic at float32 ``z``, in float64 (``Float32Erf``'s Horner passes)."""
    row = np.int64(_float32_bits(z) >> np.uint32(SHIFT)) << 2  # first of the segment's 4 coefficients
    wide = np.float64(z)
    poly = table[row + 3] * wide
    poly = poly + table[row + 2]
    poly = poly * wide
    poly = poly + table[row + 1]
    poly = poly * wide
    return poly + table[row]


@numba.njit(inline="always")
def _needs_scipy(poly):
    """erf32's rounding check (within ``MARGIN`` double ulps of a float32 midpoint) or a non-finite cubic (all
    exponent bits set), without branches (so loops over it vectorise)."""
    bits = _float64_bits(poly)
    near_midpoint = ((bits - np.int64(_CHECK_OFFSET)) & np.int64(_DROPPED)) <= np.int64(2 * MARGIN)
    return near_midpoint | ((bits & _EXPONENT) == _EXPONENT)


@numba.njit(cache=True, nogil=True)
def erf_into(z, out, table, flagged):
    """``out[i] = erf(z[i])`` where the cubic is certain; the other indices into ``flagged``; their count."""
    count = 0
    for i in range(z.shape[0]):
        poly = _cubic(z[i], table)
        if _needs_scipy(poly):
            flagged[count] = i
            count += 1
        else:
            out[i] = np.float32(poly)
    return count


@numba.njit(inline="always")
def _gelu_block(block, first, cubics, table, flagged, count):
    """GELU of ``block`` (at most ``_BLOCK`` values, flat index ``first`` on) in place where the erf is certain,
    the others' flat indices appended to ``flagged`` from ``count`` on; the new count. The cubics (a scalar loop:
    table lookups), then the check and the GELU (a loop LLVM vectorises), then, only in a block with flagged
    values, their indices."""
    for k in range(block.shape[0]):
        cubics[k] = _cubic(block[k] * INV_SQRT2, table)
    flagged_here = 0
    for k in range(block.shape[0]):
        poly, value = cubics[k], block[k]
        uncertain = _needs_scipy(poly)
        flagged_here += np.int64(uncertain)
        gelu = value * (np.float32(poly) + _ONE) * _HALF
        block[k] = value if uncertain else gelu
    if flagged_here:
        for k in range(block.shape[0]):
            if _needs_scipy(cubics[k]):
                flagged[count] = first + k
                count += 1
    return count


@numba.njit(cache=True, nogil=True)
def gelu_into(x, table, flagged):
    """``x[i] = x[i] * (erf(x[i] * float32(1 / sqrt 2)) + 1) * 0.5`` in float32 where the erf is certain; the
    other indices into ``flagged``; their count."""
    cubics = np.empty(_BLOCK, dtype=np.float64)
    count = 0
    for start in range(0, x.shape[0], _BLOCK):
        count = _gelu_block(x[start : start + _BLOCK], start, cubics, table, flagged, count)
    return count


@numba.njit(cache=True, nogil=True)
def bias_gelu_into(y, bias, table, flagged):
    """``y += bias`` (rows of ``y`` [N, M]), then ``gelu_into`` of ``y`` (flat indices)."""
    cubics = np.empty(_BLOCK, dtype=np.float64)
    count, width = 0, y.shape[1]
    for r in range(y.shape[0]):
        for start in range(0, width, _BLOCK):
            block, bias_block = y[r, start : start + _BLOCK], bias[start : start + _BLOCK]
            for k in range(block.shape[0]):
                block[k] = block[k] + bias_block[k]
            count = _gelu_block(block, r * width + start, cubics, table, flagged, count)
    return count


@numba.njit(cache=True, nogil=True)
def masked_shift(scores, mask_add):
    """``scores += mask_add[:, None, None, :]``, then each row minus its maximum, in place (float32). The maximum
    without branches (so the loop vectorises): the largest value, or NaN if the row has one."""
    batch, heads, rows, cols = scores.shape
    flat = scores.reshape(batch * heads * rows, cols)
    for i in range(flat.shape[0]):
        row, add = flat[i], mask_add[i // (heads * rows)]
        top, has_nan = row.dtype.type(-np.inf), False
        for c in range(cols):
            row[c] = row[c] + add[c]
            value = row[c]  # as stored (rounded to float32)
            has_nan |= value != value
            top = value if value > top else top
        if has_nan:
            top = row.dtype.type(np.nan)
        for c in range(cols):
            row[c] = row[c] - top


@numba.njit
def _block_sum(a, start, n):
    """NumPy's float32 pairwise-sum leaf (``n <= 128``): 8 running sums, combined as a tree, then the tail."""
    if n < 8:
        total = a.dtype.type(0)
        for i in range(start, start + n):
            total += a[i]
        return total
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    i, end = start + 8, start + n - n % 8
    while i < end:
        r0, r1, r2, r3 = r0 + a[i], r1 + a[i + 1], r2 + a[i + 2], r3 + a[i + 3]
        r4, r5, r6, r7 = r4 + a[i + 4], r5 + a[i + 5], r6 + a[i + 6], r7 + a[i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < start + n:
        total += a[i]
        i += 1
    return total


@functools.cache
def pairwise_plan(n: int) -> np.ndarray:
    """NumPy's pairwise-sum tree of ``n`` values (its float32 ``add.reduce`` over a contiguous axis: blocks of at
    most 128 values summed by ``_block_sum``, a longer block cut at half, rounded down to a multiple of 8, and its
    halves' sums added) as a postfix program of int64 rows: ``(start, size, 0)`` pushes a block's sum,
    ``(0, 0, 1)`` replaces the top two sums by their sum. Built here, evaluated by ``_run_plan``: numba's cache
    breaks recursive kernels."""
    program = []

    def emit(start: int, size: int) -> None:
        if size <= 128:
            program.append((start, size, 0))
            return
        half = size // 2 - (size // 2) % 8
        emit(start, half)
        emit(start + half, size - half)
        program.append((0, 0, 1))

    emit(0, n)
    plan = np.array(program, dtype=np.int64).reshape(-1, 3)
    plan.flags.writeable = False
    return plan


@numba.njit(inline="always")
def _run_plan(a, plan, sums):
    """``a.sum()`` as NumPy's float32 ``add.reduce`` of a contiguous row: 0 plus the pairwise tree ``plan``
    (``pairwise_plan(len(a))``) evaluated on the stack ``sums``."""
    top = 0
    for k in range(plan.shape[0]):
        if plan[k, 2]:
            top -= 1
            sums[top - 1] = sums[top - 1] + sums[top]
        else:
            sums[top] = _block_sum(a, plan[k, 0], plan[k, 1])
            top += 1
    return np.float32(0) + sums[0]


@numba.njit(inline="always")
def _normalise_row(row, centred, squares, weight, bias, eps, plan, sums):
    """``minilm.layer_norm`` of one row into ``centred`` (which may be ``row`` itself)."""
    count = np.float64(row.shape[0])  # np.mean divides the float32 sum by an intp: in float64, then float32
    mean = np.float32(np.float64(_run_plan(row, plan, sums)) / count)
    for c in range(row.shape[0]):
        centred[c] = row[c] - mean
        squares[c] = centred[c] * centred[c]
    var = np.float32(np.float64(_run_plan(squares, plan, sums)) / count)
    scale = np.float32(1.0) / np.sqrt(var + eps)
    for c in range(row.shape[0]):
        centred[c] = centred[c] * scale * weight[c] + bias[c]


@numba.njit(cache=True, nogil=True)
def layer_norm_into(x, weight, bias, eps, out, plan):
    """``minilm.layer_norm`` of the rows of ``x`` [N, H] into ``out`` [N, H] (``plan = pairwise_plan(H)``)."""
    squares, sums = np.empty(x.shape[1], dtype=x.dtype), np.empty(plan.shape[0], dtype=x.dtype)
    for r in range(x.shape[0]):
        _normalise_row(x[r], out[r], squares, weight, bias, eps, plan, sums)


@numba.njit(cache=True, nogil=True)
def add_layer_norm_into(x, linear_bias, residual, weight, bias, eps, plan):
    """``x += linear_bias; x += residual``, then ``minilm.layer_norm`` of the rows of ``x`` [N, H] in place."""
    squares, sums = np.empty(x.shape[1], dtype=x.dtype), np.empty(plan.shape[0], dtype=x.dtype)
    for r in range(x.shape[0]):
        row, other = x[r], residual[r]
        for c in range(row.shape[0]):
            row[c] = (row[c] + linear_bias[c]) + other[c]
        _normalise_row(row, row, squares, weight, bias, eps, plan, sums)


@functools.cache
def table() -> np.ndarray:
    """``erf32.coefficients()`` as one read-only float64 array, segment by segment ``c0, c1, c2, c3`` (1-D: the
    index is a shift, not a multiply)."""
    rows = np.stack(coefficients(), axis=1).reshape(-1)
    rows.flags.writeable = False
    return rows


def erf(z: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Write ``scipy.special.erf(z)`` into ``out`` (float32, 1-D, contiguous, same length); return ``out``."""
    flagged = np.empty(z.shape[0], dtype=np.intp)
    where = flagged[: erf_into(z, out, table(), flagged)]
    if where.size:
        out[where] = special.erf(z[where])
    return out


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """``minilm.layer_norm`` (over the last axis, float32) as a new array, bit for bit."""
    x2, weight, bias = (_read_only(a) for a in (np.ascontiguousarray(x).reshape(-1, x.shape[-1]), weight, bias))
    out = np.empty(x2.shape, dtype=np.float32)
    layer_norm_into(x2, weight, bias, np.float32(eps), out, pairwise_plan(x2.shape[1]))
    return out.reshape(x.shape)


def add_layer_norm(x, linear_bias, residual, weight, bias, eps: float) -> np.ndarray:
    """``x += linear_bias; x += residual; return minilm.layer_norm(x, weight, bias, eps)`` for C-contiguous
    float32 [N, H] arrays (the vectors [H]), into ``x``."""
    vectors = (_read_only(a) for a in (linear_bias, residual, weight, bias))
    add_layer_norm_into(x, *vectors, np.float32(eps), pairwise_plan(x.shape[1]))
    return x


def softmax_rows(scores: np.ndarray, mask_add: np.ndarray) -> np.ndarray:
    """``minilm``'s attention softmax of C-contiguous float32 scores [B, heads, T, U] with the additive mask
    [B, U], in place: ``masked_shift``, then NumPy's ``exp`` and row-sum division (NumPy's own SIMD code, kept)."""
    masked_shift(scores, mask_add)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view (numba compiles one kernel per writeability: this keeps it to one)."""
    view = array.view()
    view.flags.writeable = False
    return view


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU of a 1-D contiguous float32 array in place, as minilm's NumPy passes; return ``x``."""
    flagged = np.empty(x.shape[0], dtype=np.intp)
    return _finish_gelu(x, flagged[: gelu_into(x, table(), flagged)])


def bias_gelu(y: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``y += bias`` then GELU, in place on C-contiguous float32 rows [N, M] (``minilm``'s ``_linear`` bias add and
    ``gelu``); return ``y``."""
    flagged = np.empty(y.size, dtype=np.intp)
    _finish_gelu(y.reshape(-1), flagged[: bias_gelu_into(y, _read_only(bias), table(), flagged)])
    return y


def _finish_gelu(flat: np.ndarray, where: np.ndarray) -> np.ndarray:
    """The GELU of the values the kernels left at ``where`` (their erf by SciPy), minilm's float32 operations."""
    if where.size:
        values = flat[where]
        e = special.erf(values * INV_SQRT2)
        e += 1
        values *= e
        values *= np.float32(0.5)
        flat[where] = values
    return flat
