"""numba kernel of NumPy's float32 normal draw on PCG64 (``normal32`` decides when it runs).

Contract: ``fill(out, state)`` writes into ``out`` (1-D contiguous float32) the values
``Generator(PCG64).standard_normal(dtype=np.float32, out=out)`` writes, and advances ``state`` (uint64[6]: the
128-bit LCG state high and low words, the increment's high and low words, ``has_uint32``, ``uinteger``) as the bit
generator advances. Bit for bit because it is NumPy's own arithmetic, step by step:

* PCG64 (XSL-RR 128/64): ``state = state * 0x2360ED051FC65DA44385DF649FCCF645 + inc`` (mod 2^128, the 64 x 64
  high word from 32-bit halves), output ``rotr64(hi ^ lo, hi >> 58)``; ``next_uint32`` hands out the low half of a
  64-bit output and buffers the high half (``has_uint32``, ``uinteger``), as NumPy's ``pcg64_next32``.
* NumPy's ``random_standard_normal_f`` (ziggurat, 256 float32 layers): ``idx = r & 0xff``, sign bit 8,
  ``rabs = r >> 9`` (23 bits), ``x = rabs * wi[idx]`` in float32, accepted when ``rabs < ki[idx]``; the base layer's
  tail from ``log1pf(-next_float)`` in float32; the wedges compare the float32 ``(fi[idx-1] - fi[idx]) * u + fi[idx]``
  with ``exp(-0.5 * x * x)`` **in double** (C's ``-0.5`` is a double: numba's own ``standard_normal`` does this in
  float32 and so loses step with NumPy's, e.g. at value 10 120 771 of ``SeedSequence([1, 2, 3])``);
  ``next_float = (next_uint32 >> 8) * 2^-24``.

The tables ``ki``, ``wi``, ``fi`` and the tail constants are NumPy's (``ziggurat_constants.h``), as numba ships them.
No fastmath: LLVM contracts nothing into FMAs. ``nogil``: MeZO's threads draw their tensors' z at once, as
they do with NumPy's call, which releases the GIL too. Importing this module needs numba; the kernel compiles on
first use (about 2 s) and caches its machine code (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np
from numba.np.random import _constants as _tables

_KI = np.ascontiguousarray(_tables.ki_float, dtype=np.uint32)
_WI = np.ascontiguousarray(_tables.wi_float, dtype=np.float32)
_FI = np.ascontiguousarray(_tables.fi_float, dtype=np.float32)
_R = np.float32(_tables.ziggurat_nor_r_f)
_INV_R = np.float32(_tables.ziggurat_nor_inv_r_f)
_TO_UNIT = np.float32(1.0) / np.float32(16777216.0)  # next_float's 2^-24

_MUL_HI = np.uint64(0x2360ED051FC65DA4)  # PCG's default 128-bit multiplier
_MUL_LO = np.uint64(0x4385DF649FCCF645)
_LOW32 = np.uint64(0xFFFFFFFF)
_U0, _U1, _U8, _U9 = np.uint64(0), np.uint64(1), np.uint64(8), np.uint64(9)
_U32, _U58, _U63, _U64 = np.uint64(32), np.uint64(58), np.uint64(63), np.uint64(64)
_BYTE, _RABS = np.uint64(0xFF), np.uint64(0x7FFFFF)


@numba.njit(cache=True, inline="always")
def _mul_high(a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    a0, a1, b0, b1 = a & _LOW32, a >> _U32, b & _LOW32, b >> _U32
    p0, p1, p2 = a0 * b0, a0 * b1, a1 * b0
    middle = (p0 >> _U32) + (p1 & _LOW32) + (p2 & _LOW32)
    return a1 * b1 + (p1 >> _U32) + (p2 >> _U32) + (middle >> _U32)


@numba.njit(cache=True, inline="always")
def _next_uint32(state):
    if state[4]:
        state[4] = _U0
        return state[5]
    high, low = state[0], state[1]
    product_low = low * _MUL_LO
    new_low = product_low + state[3]
    carry = _U1 if new_low < product_low else _U0
    new_high = _mul_high(low, _MUL_LO) + low * _MUL_HI + high * _MUL_LO + state[2] + carry
    state[0], state[1] = new_high, new_low
    rotation = new_high >> _U58
    folded = new_high ^ new_low
    output = (folded >> rotation) | (folded << ((_U64 - rotation) & _U63))
    state[4], state[5] = _U1, output >> _U32
    return output & _LOW32


@numba.njit(cache=True, inline="always")
def _next_float(state):
    return np.float32(np.float32(_next_uint32(state) >> _U8) * _TO_UNIT)


@numba.njit(cache=True, nogil=True)
def fill(out, state):
    for k in range(out.shape[0]):
        while True:
            r = _next_uint32(state)
            idx = r & _BYTE
            rabs = (r >> _U9) & _RABS
            x = np.float32(np.float32(rabs) * _WI[idx])
            if (r >> _U8) & _U1:
                x = -x
            if rabs < _KI[idx]:
                out[k] = x
                break
            if idx == 0:
                while True:
                    xx = np.float32(-_INV_R * np.float32(np.log1p(np.float32(-_next_float(state)))))
                    yy = np.float32(-np.float32(np.log1p(np.float32(-_next_float(state)))))
                    if np.float32(yy + yy) > np.float32(xx * xx):
                        tail = np.float32(_R + xx)
                        out[k] = -tail if (rabs >> _U8) & _U1 else tail
                        break
                break
            wedge = np.float32(np.float32((_FI[idx - 1] - _FI[idx]) * _next_float(state)) + _FI[idx])
            if np.float64(wedge) < np.exp(-0.5 * np.float64(x) * np.float64(x)):
                out[k] = x
                break
