"""Integer primitives of ElasticZO-INT8 (the NITI format): requantisation, rounding, the integer CE sign
and the INT8 back-propagation head, bit for bit.

Format (``pezo.golden.engine.int8``): a tensor is an int64 array of int8 values plus one Python-int exponent for the
whole (batch) tensor, value = q * 2^e. Weights and requantised tensors saturate to [-127, 127]; inputs
use [-128, 127]. Accumulators are exact int32 sums (held in int64; |acc| <= 2^31 is enforced).

Rounding rules, one per operation (``bitwidth``, ``requantize_tensor`` and ``pseudo_stochastic_round`` live in
``pezo.golden.engine.int8``, which the engine's backprop tail shares; they are re-exported here):

* ``bitwidth(x)`` = floor(log2(max|x|)) + 1 (the paper's form, 32 - clz in RTL; 0 for an all-zero
  tensor). NITI-REF uses ceil(log2(max|x|)), one less when max|x| is an exact power of two (trap: the
  paper/clz form is the one implemented; it keeps 64 -> 7 bits and 1 -> 1 bit).
* ``requantize_tensor``: b = bitwidth(acc); if b > 7, shift = b - 7, out = sat(round_shift(acc, shift),
  -127, 127) with round half up (``pezo.golden.engine.int8.round_shift``: floor((x + 2^(shift-1)) / 2^shift)) and the
  exponent grows by shift; otherwise the tensor is returned unchanged.
* ``quantize_tensor``: NITI's input quantiser, e = ceil(log2(max|x|)) - 7, q = sat(floor(x*2^-e + 1/2),
  -128, 127).
* ``pseudo_stochastic_round(x, bits)``: NITI's PstoShift in **sign-magnitude** form. shift =
  bitwidth(x) - bits; shift < 1 returns x; otherwise |x| = q*2^shift + r, the upper shift - h bits of r
  (h = shift >> 1) are compared with the lower h bits (doubled when shift is odd) and q is incremented
  when the upper part is larger; the sign is re-applied and the result saturated to [-127, 127]. Traps:
  NITI-REF's literal ``//`` code floors negative values (-1.5 can become -3) -- here psr(-x) == -psr(x);
  and r_max = 1 (max|x| = 1) gives bw = 1 and shift <= 0, so x passes unchanged (NITI-REF's ceil form
  would zero every update).
* Floor shifts (``floor_shift``): arithmetic right shift (floor, towards -infinity; never truncation
  towards zero) for negative amounts, exact left shift otherwise.
* ``integer_ce_sign`` ("INT8*", ElasticZO Eqs. 7-12): common exponent s = min(s_alpha, s_beta) by left
  shifts; per sample subtract the label logit; hat = floor_shift(47274 * diff, s - 15) (log2 e ~ 47274 *
  2^-15, so hat ~ floor(log2 e * diff * 2^s)); joint per-sample offset p = max(max_j hatA, max_j hatB) -
  10 (the same p for both passes, so their ratio survives); tilde = max(hat - p, 0); S = sum_j 2^tilde
  exactly as the paper writes it, so a clamped term counts 2^0 = 1, not 0 (trap); B = 1: sign(SA - SB);
  B > 1: sign(sum_b floor_log2(SA_b) - sum_b floor_log2(SB_b)), floor_log2 = bitwidth - 1 (clz).
* ``sto_shift(x, shift, rng)``: true stochastic rounding of x / 2^shift: floor(x / 2^shift) + (u < low)
  with low = x - floor(x / 2^shift) * 2^shift in [0, 2^shift) and u = ``rng.integers(0, 2^shift)``, one
  draw per element in C order (``x.size`` draws, none when shift = 0). P(up) = low / 2^shift: unbiased.
* ``loss_gradient_int8``: this module's integer version of NITI's TiLoss (the paper's C++ one is not
  described). Per sample, with F = ``frac_bits`` fractional bits (units of 2^-F of log2 e):
  d_j = o_j - max_k o_k <= 0 (exact); v_j = floor_shift(47274 * d_j, exponent - 15 + F) (so max_j v_j = 0);
  w_j = max(v_j + 10 * 2^F, 0) (NITI's offset max - 10, clamp at 0); q_j = 2^(w_j / 2^F) - 1 in Q15:
  q_j = (EXP2[w_j mod 2^F] << (w_j >> F)) - 2^15, where EXP2[k] = round-half-up(2^(15 + k / 2^F)) is
  computed with exact integer arithmetic (a 2^F-entry ROM); so a clamped term is exactly 0 as in NITI-REF,
  and the largest term is (2^10 - 1) * 2^15. Softmax in Q11: p_j = (q_j << 11) // sum_k q_k (floor of
  non-negative ints); at the label p_t -= 2^11, so p ~ 2^11 (softmax - onehot); err = sat(sto_shift(p,
  4, rng), -127, 127) with exponent 0 (NITI's convention: err * 2^-7 ~ softmax - onehot, the constant
  2^-7 is dropped because the PSR gradients ignore magnitudes). F = 0 is the plain "2^v - 1 with integer
  v" form, whose factor-of-2 steps make the softmax coarse; the default F = 6 keeps |err - 128 *
  (softmax - onehot)| within about 2 LSB at every exponent, so NITI-REF's small-exponent (s_o <= -7)
  Taylor branch is not needed and not implemented.
* ``fc_backward_int8`` (NITI TiLinear.backward): err_in32 = err @ W (W before the update), requantised by
  ``requantize_tensor`` (round half up to 7 bits); grad32 = err^T @ act_in, rounded by
  ``pseudo_stochastic_round(grad32, grad_bits)``.
"""

from __future__ import annotations

import functools

import numpy as np

from pezo.golden.engine.int8 import (  # noqa: F401 (the NITI per-tensor rules, part of this API)
    ACC_LIMIT,
    ACT_MAX,
    ACT_MIN,
    BITS_RANGE,
    MAX_INPUTS,
    SHIFT_RANGE,
    WEIGHT_MAX,
    WEIGHT_MIN,
    bitwidth,
    check_int8,
    exponent_for,
    matmul,
    pseudo_stochastic_round,
    quantize,
    requantize_tensor,
)
from pezo.golden.engine.int8 import acc_array as _acc
from pezo.golden.engine.int8 import int_array as _int_array
from pezo.golden.engine.int8 import int_scalar as _int_scalar

LOG2E_Q15 = 47274
"""log2(e) ~ 47274 * 2^-15 = 1.4426880 (true 1.4426950), ElasticZO Eq. 9."""
CE_OFFSET = 10
"""Offset below the per-sample maximum: kept terms are 2^0 .. 2^10 (ElasticZO Eq. 9, NITI TiLoss)."""
SOFTMAX_BITS = 11
"""The loss gradient's softmax is in Q11 before the 4-bit stochastic shift (NITI TiLoss)."""
LOSS_GRAD_SHIFT = 4
EXP2_Q = 15
"""Fraction bits of the 2^(k / 2^F) ROM of ``loss_gradient_int8``."""
LOGIT_EXPONENT_RANGE = (-16, 16)
"""Logit exponents accepted by the CE units (keeps every intermediate well inside int64)."""


# -- validation ----------------------------------------------------------------------------------
def _logit_batch(alpha, beta, labels) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """[B, K] int8 logits (a [K] vector is one sample) and [B] labels in 0..K-1."""
    a = check_int8("alpha", alpha)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"alpha must be [B, K] logits, got shape {np.shape(alpha)}")
    b = None
    if beta is not None:
        b = check_int8("beta", beta)
        if b.ndim == 1:
            b = b[None, :]
        if b.shape != a.shape:
            raise ValueError(f"beta must have the shape of alpha {a.shape}, got {np.shape(beta)}")
    t = np.atleast_1d(_int_array("labels", labels))
    if t.shape != (a.shape[0],) or t.min() < 0 or t.max() >= a.shape[1]:
        raise ValueError(
            f"labels must be {a.shape[0]} class indices in 0..{a.shape[1] - 1}, "
            f"got shape {t.shape} values {t.tolist()[:8]}"
        )
    return a, b, t


def _logit_exponent(name: str, v) -> int:
    return _int_scalar(name, v, *LOGIT_EXPONENT_RANGE)


# -- format ------------------------------------------------------------------------------------
def floor_shift(x, shift: int) -> np.ndarray:
    """x * 2^shift rounded down: x << shift for shift >= 0, arithmetic (floor) x >> -shift otherwise."""
    x = np.asarray(x, dtype=np.int64)
    return x << shift if shift >= 0 else x >> -shift


def quantize_tensor(x) -> tuple[np.ndarray, int]:
    """NITI input quantiser: e = ceil(log2(max|x|)) - 7, q = sat(round-half-up(x * 2^-e), -128, 127)."""
    e = exponent_for(x)
    return quantize(x, e, ACT_MIN, ACT_MAX), e


# -- ZO gradient sign ------------------------------------------------------------------------------
def integer_ce_sign(alpha, s_alpha: int, beta, s_beta: int, labels) -> int:
    """ElasticZO "INT8*" sign(L(alpha) - L(beta)) in integers (Eqs. 7-12); +1: the + pass loses more."""
    a, b, t = _logit_batch(alpha, beta, labels)
    s_alpha = _logit_exponent("s_alpha", s_alpha)
    s_beta = _logit_exponent("s_beta", s_beta)
    s = min(s_alpha, s_beta)
    rows = np.arange(a.shape[0])
    hats = []
    for logits, e in ((a, s_alpha), (b, s_beta)):
        common = logits << (e - s)
        diff = common - common[rows, t][:, None]
        hats.append(floor_shift(LOG2E_Q15 * diff, s - 15))
    p = np.maximum(hats[0].max(axis=1), hats[1].max(axis=1)) - CE_OFFSET
    sums = [(np.int64(1) << np.maximum(h - p[:, None], 0)).sum(axis=1) for h in hats]
    if a.shape[0] == 1:
        return int(np.sign(sums[0][0] - sums[1][0]))
    logs = [sum(int(v).bit_length() - 1 for v in s_) for s_ in sums]
    return int(np.sign(logs[0] - logs[1]))


def cross_entropy_int8(logits, exponent: int, labels) -> float:
    """float64 mean cross-entropy of the dequantised logits ``logits * 2^exponent``."""
    o, _, t = _logit_batch(logits, None, labels)
    z = np.ldexp(o.astype(np.float64), _int_scalar("exponent", exponent))
    zmax = z.max(axis=1)
    lse = zmax + np.log(np.exp(z - zmax[:, None]).sum(axis=1))
    return float(np.mean(lse - z[np.arange(len(t)), t]))


def float_ce_sign(alpha, s_alpha: int, beta, s_beta: int, labels) -> int:
    """ElasticZO "INT8": sign(CE(alpha * 2^s_alpha) - CE(beta * 2^s_beta)) in float64."""
    _, _, t = _logit_batch(alpha, beta, labels)
    return int(np.sign(cross_entropy_int8(alpha, s_alpha, t) - cross_entropy_int8(beta, s_beta, t)))


# -- BP head -----------------------------------------------------------------------------------
def sto_shift(x, shift: int, rng: np.random.Generator) -> np.ndarray:
    """Stochastic rounding of x / 2^shift: floor + (u < low bits), u = rng.integers(0, 2^shift) per element."""
    x = _acc("x", x)
    shift = _int_scalar("shift", shift, *SHIFT_RANGE)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if shift == 0:
        return x
    low = x & ((1 << shift) - 1)
    u = rng.integers(0, 1 << shift, size=x.shape, dtype=np.int64)
    return (x >> shift) + (u < low)


@functools.cache
def exp2_table(frac_bits: int) -> tuple[int, ...]:
    """EXP2[k] = round-half-up(2^(15 + k / 2^frac_bits)), k < 2^frac_bits, by exact integer arithmetic."""
    n_frac = 1 << frac_bits
    table = []
    for k in range(n_frac):
        target = 1 << ((EXP2_Q + 1) * n_frac + k)  # (2 * 2^(Q + k/P))^P; never an odd number's power
        n = round(2.0 ** (EXP2_Q + k / n_frac))
        while (2 * n + 1) ** n_frac <= target:  # want (2n - 1)^P <= target < (2n + 1)^P
            n += 1
        while (2 * n - 1) ** n_frac > target:
            n -= 1
        table.append(n)
    return tuple(table)


def loss_gradient_int8(
    logits, exponent: int, labels, rng: np.random.Generator, frac_bits: int = 6
) -> tuple[np.ndarray, int]:
    """Integer TiLoss: (err, 0) with err * 2^-7 ~ softmax(logits * 2^exponent) - onehot(labels), per sample."""
    o, _, t = _logit_batch(logits, None, labels)
    exponent = _logit_exponent("exponent", exponent)
    frac_bits = _int_scalar("frac_bits", frac_bits, 0, 8)
    d = o - o.max(axis=1, keepdims=True)
    v = floor_shift(LOG2E_Q15 * d, exponent - 15 + frac_bits)
    w = np.maximum(v + (CE_OFFSET << frac_bits), 0)
    table = np.array(exp2_table(frac_bits), dtype=np.int64)
    q = (table[w & ((1 << frac_bits) - 1)] << (w >> frac_bits)) - (1 << EXP2_Q)
    p = (q << SOFTMAX_BITS) // q.sum(axis=1, keepdims=True)
    p[np.arange(len(t)), t] -= 1 << SOFTMAX_BITS
    return np.clip(sto_shift(p, LOSS_GRAD_SHIFT, rng), WEIGHT_MIN, WEIGHT_MAX), 0


def fc_backward_int8(err, err_exponent: int, weight, act_in, grad_bits: int) -> tuple[np.ndarray, int, np.ndarray]:
    """NITI TiLinear.backward for y = act_in @ weight.T: (err_in, err_in_exponent, grad).

    err: [B, O] int8 at ``err_exponent``; weight: [O, I] int8 (before the update); act_in: [B, I] int8.
    err_in = requantize_tensor(err @ weight) and err_in_exponent = err_exponent + shift; the weight
    exponent is the caller's to add (NITI: e_exp += shift + s_w). grad = PSR(err.T @ act_in, grad_bits),
    its exponent ignored as in NITI (grad_bits acts as the learning rate)."""
    err = check_int8("err", err)
    weight = check_int8("weight", weight)
    act_in = check_int8("act_in", act_in)
    grad_bits = _int_scalar("grad_bits", grad_bits, *BITS_RANGE)
    err_exponent = _int_scalar("err_exponent", err_exponent)
    if err.ndim != 2 or weight.ndim != 2 or act_in.ndim != 2:
        raise ValueError(f"err, weight and act_in must be 2-D, got {err.shape}, {weight.shape}, {act_in.shape}")
    if weight.shape[0] != err.shape[1]:
        raise ValueError(f"weight must be [{err.shape[1]}, I] for err {err.shape}, got {weight.shape}")
    if act_in.shape != (err.shape[0], weight.shape[1]):
        raise ValueError(f"act_in must be {(err.shape[0], weight.shape[1])}, got {act_in.shape}")
    if max(err.shape) > MAX_INPUTS:
        raise ValueError(f"err dimensions must be <= {MAX_INPUTS} (int32 accumulation), got {err.shape}")
    err_in, err_in_exponent = requantize_tensor(matmul(err, weight.T), err_exponent)
    grad = pseudo_stochastic_round(matmul(err.T, act_in.T), grad_bits)
    return err_in, err_in_exponent, grad


def relu_backward(err, act) -> np.ndarray:
    """ReLU backward: err where act > 0, else 0."""
    err = _int_array("err", err)
    act = _int_array("act", act)
    if act.shape != err.shape:
        raise ValueError(f"act must have the shape of err {err.shape}, got {act.shape}")
    return np.where(act > 0, err, 0).astype(np.int64)
