"""The power-of-two quantisation rule of what a user brings (an ONNX model, a data set): one exponent per tensor,
chosen so that the tensor's largest magnitude fits the int8 range without saturating.

* **Exponent** (``pow2_exponent``): the smallest integer s with max|x| <= 127 * 2^s (0 for an all-zero tensor).
  Weights: over the whole weight tensor. Inputs: over the training split. Hidden activations (the ONNX import's
  requantisation shifts): over the float model's activations on the training split (after the ReLU).
* **Rounding** (``quantize_rint``): q = sat(rint(float32(x) / 2^s), lo, hi), round half to even in float32 --
  what ONNX ``QuantizeLinear`` (scale 2^s, zero point 0) does with the same float input, so an exported model
  sees exactly the engine's int8 inputs. Inputs saturate to -128..127, weights to -127..127.

(The engine's own rules -- round half up in the requantisation shifts, NITI's exponent of the built-in data --
are ``pezo.golden.engine.int8``'s; this module only decides how floats from outside become int8.)
"""

from __future__ import annotations

import math

import numpy as np

from pezo.golden.engine.int8 import ACT_MAX, ACT_MIN

INT8_PEAK = 127
EXPONENT_RANGE = (-64, 64)


def pow2_exponent(x) -> int:
    """The smallest integer s with max|x| <= 127 * 2^s (0 for all zeros); ValueError for NaN / inf."""
    peak = float(np.abs(np.asarray(x, dtype=np.float64)).max(initial=0.0))
    if not math.isfinite(peak):
        raise ValueError("the tensor holds NaN or inf")
    if peak == 0.0:
        return 0
    s = math.ceil(math.log2(peak / INT8_PEAK))
    while peak <= INT8_PEAK * 2.0 ** (s - 1):  # log2's rounding
        s -= 1
    while peak > INT8_PEAK * 2.0**s:
        s += 1
    return s


def quantize_rint(x, exponent: int, lo: int = ACT_MIN, hi: int = ACT_MAX) -> np.ndarray:
    """q = sat(rint(float32(x) / 2^exponent), lo, hi) (int64; round half to even, as ONNX ``QuantizeLinear``; +-inf
    saturate, NaN is a ValueError)."""
    scaled = np.asarray(x, dtype=np.float32) / np.float32(2.0**exponent)
    if np.isnan(scaled).any():  # NaN has no integer: rint and the cast would give -2^63
        raise ValueError(f"x must hold no NaN (index {np.argwhere(np.isnan(scaled))[0].tolist()} is NaN)")
    return np.clip(np.rint(scaled), lo, hi).astype(np.int64)
