"""MeZO's float32 normal draw, compiled when it can be: the same values and generator state as NumPy's, faster.

Contract: ``standard_normal_f32(rng, out)`` leaves ``out`` and ``rng`` exactly as
``rng.standard_normal(dtype=np.float32, out=out)`` does (the values, and the bit generator's state for every later
draw), and returns ``out``. It runs the numba kernel ``normal32_kernel.fill`` when ``rng``'s bit generator is
exactly ``np.random.PCG64``, ``out`` is 1-D C-contiguous float32 with at least ``COMPILED_FROM`` values, and the
golden model's compiled kernels are allowed now (``pezo.golden.lm.jit.switched_off()``: not under
``PEZO_NO_NUMBA=1`` or ``numpy_only()``; not inside ``numpy_draw()``) and load; otherwise NumPy's own call.
Measured here: 3.5 ns per value against NumPy's 10-16 (``benchmarks/bench_zo_step.py``: 16 of last1's 78 ms step
were this draw).
"""

from __future__ import annotations

import contextlib

import numpy as np

from pezo.golden.lm import jit

COMPILED_FROM = 4096
"""Smaller draws stay NumPy's: reading and writing the generator's state costs more than the kernel saves."""

_MASK64 = (1 << 64) - 1
_loaded: dict[str, object] = {}
_forced_numpy = 0


def _kernel():
    """``normal32_kernel.fill`` compiled (or loaded from numba's cache) once per process, else ``None``."""
    if "fill" not in _loaded:
        try:
            from pezo.golden.zo import normal32_kernel

            normal32_kernel.fill(np.empty(1, np.float32), np.array([0, 1, 0, 1, 0, 0], dtype=np.uint64))
        except Exception as error:  # no numba, or it fails to compile: NumPy's draw remains
            _loaded["fill"], _loaded["reason"] = None, f"{type(error).__name__}: {error}"
        else:
            _loaded["fill"] = normal32_kernel.fill
    return _loaded["fill"]


def compiled() -> bool:
    """Whether ``standard_normal_f32`` runs the compiled kernel now."""
    return not _forced_numpy and jit.switched_off() is None and _kernel() is not None


def status() -> str:
    """What ``standard_normal_f32`` runs now, in words (for reports): ``compiled (numba)``, or NumPy's call and why."""
    if _forced_numpy:
        return "numpy (numpy_draw)"
    off = jit.switched_off()
    if off:
        return f"numpy ({off})"
    return "compiled (numba)" if _kernel() is not None else f"numpy ({_loaded['reason']})"


@contextlib.contextmanager
def numpy_draw():
    """NumPy's own draw inside the ``with`` block (this process, every thread; the LM's kernels stay on)."""
    global _forced_numpy
    _forced_numpy += 1
    try:
        yield
    finally:
        _forced_numpy -= 1


def standard_normal_f32(rng: np.random.Generator, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (float32) with ``rng``'s next standard normals: ``rng.standard_normal(dtype=float32, out=out)``."""
    bit_generator = rng.bit_generator
    if (
        out.ndim != 1
        or out.shape[0] < COMPILED_FROM
        or out.dtype != np.float32
        or not out.flags.c_contiguous
        or not out.flags.writeable
        or type(bit_generator) is not np.random.PCG64
        or not compiled()
    ):
        return rng.standard_normal(dtype=np.float32, out=out)
    with bit_generator.lock:
        state = bit_generator.state
        lcg, inc = state["state"]["state"], state["state"]["inc"]
        words = [lcg >> 64, lcg & _MASK64, inc >> 64, inc & _MASK64, state["has_uint32"], state["uinteger"]]
        words = np.array(words, dtype=np.uint64)
        _loaded["fill"](out, words)
        high, low, _, _, has_uint32, uinteger = (int(w) for w in words)
        state["state"]["state"] = (high << 64) | low
        state["has_uint32"], state["uinteger"] = has_uint32, uinteger
        bit_generator.state = state
    return out
