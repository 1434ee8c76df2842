"""Whether the golden LM uses its compiled (numba) kernels: same results bit for bit, only faster.

Contract: ``kernels()`` is the module ``pezo.golden.lm.jit_kernels`` when it may be used now, else ``None``, and
callers then run their NumPy passes (the results are the same either way, so nothing else depends on it). It
is ``None`` when ``PEZO_NO_NUMBA=1`` is set (read at each call), inside ``numpy_only()``, or when numba cannot
be imported or its kernels fail to compile (tried once per process; ``status()`` says why). numba is imported
only on the first call, so code that never runs a MiniLM layer (GELU, LayerNorm) does not pay for it.
"""

from __future__ import annotations

import contextlib
import os
from types import ModuleType

ENV_DISABLE = "PEZO_NO_NUMBA"
"""Set to 1 to force the NumPy passes."""

_loaded: dict[str, object] = {}
_forced_off = 0


def _load() -> ModuleType | None:
    if "module" not in _loaded:
        try:
            import numpy as np

            from pezo.golden.lm import jit_kernels

            one, row, scores = np.zeros(1, np.float32), np.ones((1, 1), np.float32), np.zeros((1, 1, 1, 1), np.float32)
            jit_kernels.gelu(one)  # compile (or load from numba's cache) every kernel now
            jit_kernels.bias_gelu(row.copy(), one)
            jit_kernels.erf(one, one.copy())
            jit_kernels.layer_norm(row, one, one, 1e-12)
            jit_kernels.add_layer_norm(row.copy(), one, row, one, one, 1e-12)
            jit_kernels.softmax_rows(scores, row)
        except Exception as error:  # no numba, an unsupported numpy, a compile error: the NumPy passes remain
            _loaded["module"], _loaded["reason"] = None, f"{type(error).__name__}: {error}"
        else:
            _loaded["module"], _loaded["reason"] = jit_kernels, f"numba {jit_kernels.numba.__version__}"
    return _loaded["module"]


def switched_off() -> str | None:
    """Why the kernels are off now by request (``numpy_only`` or ``PEZO_NO_NUMBA``), else ``None``."""
    if _forced_off:
        return "off (numpy_only)"
    if os.environ.get(ENV_DISABLE, "0") not in ("", "0"):
        return f"off ({ENV_DISABLE}=1)"
    return None


def kernels() -> ModuleType | None:
    """``jit_kernels`` if the compiled kernels are to be used now, else ``None``."""
    return None if switched_off() else _load()


def status() -> str:
    """What ``kernels()`` gives now, in words (for reports): ``numba <version>`` or why not."""
    off = switched_off()
    if off:
        return off
    _load()
    return str(_loaded["reason"])


@contextlib.contextmanager
def numpy_only():
    """Run the NumPy passes inside the ``with`` block (this process, every thread)."""
    global _forced_off
    _forced_off += 1
    try:
        yield
    finally:
        _forced_off -= 1
