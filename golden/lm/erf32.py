"""float32 ``erf`` equal bit for bit to ``scipy.special.erf`` on float32, computed with NumPy vector operations.

Contract: ``erf(z)`` (and ``Float32Erf``'s pieces) return, for every float32 ``z`` including +-0, +-inf and NaN,
exactly the float32 array ``scipy.special.erf(z)`` returns. SciPy's float32 loop is a scalar call of the double
``erf`` per value, rounded to float32; this module gets the same float32 with a few whole-array passes:

* Segments: the float32 bit patterns are cut into segments of ``2^SHIFT`` consecutive patterns (one sign and one
  binade each), found by ``bits >> SHIFT``. On every segment of ``2^-100 <= |z| < 4`` a cubic in ``z`` (the
  Chebyshev interpolant of the double ``erf`` on the segment, in monomials) gives ``y`` in double precision. Its
  error is the interpolation remainder, at most ``max|erf^(4)| h^4 / 192`` on a segment of half-width ``h``: about
  9 000 double ulps of ``y`` just above ``|z| = 2`` (``h = 2^-8``), 1 100 on ``[1, 2)``, under 200 below 1.
* Rounding check: ``y`` is kept when its rounding to float32 is certain, i.e. when ``y`` is more than ``MARGIN``
  (65 536) double ulps away from a float32 rounding midpoint (SciPy's double is within a few ulps of the true erf,
  so both round the same way). The others (about one value in 4 000) are recomputed by SciPy itself.
* Fixed segments: ``|z| >= 4`` gives +-1 exactly (float32 erf is saturated there); ``|z| < 2^-100`` (results near
  float32's subnormals, where the check's 24-bit grid does not hold), the NaN patterns and any non-finite ``y``
  (``z = +-inf``) always go to SciPy.

``tests/golden/test_erf32.py`` compares whole binades, the special values and samples of every other range with
SciPy, and (marked slow) all 2^32 float32 bit patterns.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

SHIFT = 15
"""Segment = ``2^SHIFT`` consecutive float32 bit patterns: ``bits >> SHIFT`` is the segment index."""
SATURATED = 4.0
"""``|z| >= SATURATED``: float32 erf is exactly +-1."""
SMALLEST_FITTED = 2.0**-100
"""Segments below this magnitude (and NaN patterns) always go to SciPy."""
MARGIN = 1 << 16
"""Half-width, in double ulps of ``y``, of the band around a float32 rounding midpoint that goes to SciPy."""
PIECE = 1 << 14
"""Values per pass of ``erf`` (the scratch arrays stay in the CPU's L2 cache)."""

_MIDPOINT = 1 << 28  # low 29 bits of a double at a float32 rounding midpoint (52 - 23 = 29 dropped bits)
_DROPPED = (1 << 29) - 1
_CHECK_OFFSET = _MIDPOINT - MARGIN
_FALLBACK = 1.0 + 2.0**-24
"""Exactly a float32 rounding midpoint (low 29 bits ``_MIDPOINT``): the value of every always-to-SciPy segment."""


@functools.cache
def coefficients() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-segment cubic ``c0 + c1 z + c2 z^2 + c3 z^3`` (float64 arrays indexed by ``bits >> SHIFT``)."""
    count = 1 << (32 - SHIFT)
    first = np.arange(count, dtype=np.uint64) << np.uint64(SHIFT)
    with np.errstate(invalid="ignore"):  # NaN patterns
        low = first.astype(np.uint32).view(np.float32).astype(np.float64)
        centre = (first | np.uint64(1 << (SHIFT - 1))).astype(np.uint32).view(np.float32).astype(np.float64)
        size = np.abs(low)
        fitted = (size >= SMALLEST_FITTED) & (size < SATURATED)
        saturated = size >= SATURATED  # NaN compares False
    coef = np.zeros((4, count))
    coef[0] = _FALLBACK
    coef[0, saturated] = np.sign(low[saturated])
    # Chebyshev interpolation in s = (z - c) / h on [-1, 1], then the cubic re-expanded in z
    c, h = centre[fitted], (centre - low)[fitted]
    nodes = np.cos((2 * np.arange(4) + 1) * np.pi / 8)
    local = special.erf(c[:, None] + h[:, None] * nodes) @ np.linalg.inv(np.vander(nodes, 4, increasing=True)).T
    u, w = -c / h, 1 / h  # s = w z + u
    b0, b1, b2, b3 = local.T
    coef[0, fitted] = b0 + u * (b1 + u * (b2 + u * b3))
    coef[1, fitted] = w * (b1 + u * (2 * b2 + 3 * u * b3))
    coef[2, fitted] = w * w * (b2 + 3 * u * b3)
    coef[3, fitted] = w * w * w * b3
    for array in coef:
        array.flags.writeable = False
    return tuple(coef)


class Float32Erf:
    """``erf`` of 1-D contiguous float32 pieces of at most ``size`` values, with scratch arrays of its own
    (one object per thread)."""

    def __init__(self, size: int = PIECE):
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size = size
        self._coef = coefficients()
        self._index = np.empty(size, dtype=np.intp)
        self._wide = np.empty(size)
        self._poly = np.empty(size)
        self._term = np.empty(size)
        self._flagged = np.empty(size, dtype=bool)

    def __call__(self, z: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write ``erf(z)`` into ``out`` (both float32, 1-D, contiguous, same length <= ``size``); return ``out``."""
        n = z.shape[0]
        if n > self.size:
            raise ValueError(f"piece of {n} values exceeds the scratch size {self.size}")
        c0, c1, c2, c3 = self._coef
        index, wide, poly, term = self._index[:n], self._wide[:n], self._poly[:n], self._term[:n]
        np.right_shift(z.view(np.uint32), SHIFT, out=index)
        with np.errstate(invalid="ignore"):  # signalling NaNs, 0 * inf for z = +-inf: sent to SciPy below
            wide[...] = z
            np.take(c3, index, out=poly, mode="clip")  # index < len: "clip" only skips the bounds check
            poly *= wide
            poly += np.take(c2, index, out=term, mode="clip")
            poly *= wide
            poly += np.take(c1, index, out=term, mode="clip")
            poly *= wide
            poly += np.take(c0, index, out=term, mode="clip")
            out[...] = poly
        dropped = term.view(np.int64)
        np.subtract(poly.view(np.int64), _CHECK_OFFSET, out=dropped)
        dropped &= _DROPPED
        flagged = np.less_equal(dropped, 2 * MARGIN, out=self._flagged[:n])
        if not math.isfinite(poly.sum()):  # z = +-inf (0 * inf) or NaN
            flagged |= ~np.isfinite(poly)
        if flagged.any():
            where = np.flatnonzero(flagged)
            out[where] = special.erf(z[where])
        return out


def erf(z: np.ndarray) -> np.ndarray:
    """``scipy.special.erf(z)`` for a float32 array of any shape, bit for bit (a new array)."""
    if z.dtype != np.float32:
        raise TypeError(f"z must be float32, got {z.dtype}")
    z = np.ascontiguousarray(z)
    flat = z.reshape(-1)
    out = np.empty_like(flat)
    kernel = Float32Erf(min(PIECE, max(flat.size, 1)))
    for start in range(0, flat.size, kernel.size):
        kernel(flat[start : start + kernel.size], out[start : start + kernel.size])
    return out.reshape(z.shape)
