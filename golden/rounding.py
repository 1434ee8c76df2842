"""The project's integer rounding, below every golden package that rounds (rng, engine, methods).

``round_shift``: an arithmetic right shift with round half up (the hardware's ``(x + 2^(s-1)) >> s``);
``round_half_up``: the one float -> integer rounding.
"""

from __future__ import annotations

import numpy as np

SHIFT_RANGE = (0, 31)


def round_shift(x, shift: int) -> np.ndarray:
    """floor((x + 2^(shift-1)) / 2^shift): arithmetic right shift, round half up (int64)."""
    if (
        isinstance(shift, bool)
        or not isinstance(shift, (int, np.integer))
        or not SHIFT_RANGE[0] <= shift <= SHIFT_RANGE[1]
    ):
        raise ValueError(f"shift must be an integer in {SHIFT_RANGE[0]}..{SHIFT_RANGE[1]}, got {shift!r}")
    x = np.asarray(x, dtype=np.int64)
    if shift == 0:
        return x
    return (x + (1 << (shift - 1))) >> shift


def round_half_up(x) -> np.ndarray:
    """floor(x + 1/2) of a float array as int64: the project's one float -> integer rounding."""
    return np.floor(np.asarray(x, dtype=np.float64) + 0.5).astype(np.int64)
