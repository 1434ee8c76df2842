"""Stepping Forward's QZO-FF (Feng et al., NeurIPS 2024): sign-m-SPSA in 16w8a fixed point.

Format. Weights: per-tensor symmetric ``weight_bits`` integers (default 16), Delta_w = max|w| / (2^(b-1)
- 1) fixed from the start weights, w_q = round-half-up(w / Delta_w). Activations: every layer's input
quantised per batch to ``act_bits`` (default 8), Delta_a = max|a| / (2^(b_a-1) - 1); the product
a_q . w_q is exact in int64 and scaled by Delta_a Delta_w; ReLU between layers; loss = float CE.
Perturbation: z from the sampler (Gaussian, or any plugged family), z_q = clip(round-half-up(z /
Delta_z), -127, 127), 8 bits.

Step (Algorithm 1 with m = ``queries``, default 3): for i in 0..m-1 a **new batch** and perturbation
index ``step * m + i``; l+- = L(w_q +- delta) with the integer perturbation
``delta = round-half-up(eps_q * z_q * Delta_z)``, ``eps_q = round-half-up(eps / Delta_w)`` per tensor
(the digest's fix (b): the +eps, -eps passes read perturbed copies, so the weights come back exactly);
g^a += sign(l+ - l-) z_q. Update: w_q -= round_shift(F * g^a, 24) with F = round(lr * Delta_z /
(Delta_w * m) * 2^24) (the multiply-and-shift of Appendix A, 1/m folded in), saturated.

Delta_z (``z_scale``): ``pow2`` = 2^-5 (z_max = 3.97; 1_q = 32 and Delta_z * 1_q = 1 exactly, the
default), ``one-q`` = 1/36, ``literal`` = 3.5/127 -- the paper's printed constants, run as printed:
in place, w <- round(Delta_z (w 1_q + k eps_q z_q)) three times per perturbation, so every call scales
the weights by Delta_z * 1_q = 0.992 (a warning says so; the weights collapse).

The 8-bit trap: with 8-bit weights eps_q = round(eps / Delta_w) is 0 whenever max|w| > 254 eps, so
l+ = l-, the sign is 0 and nothing trains. A tensor whose eps_q rounds to 0 is one ``ValueError``
naming eps, the tensor, Delta_w and the smallest eps that works.

Under a locally linear loss and Gaussian z, E[sign(grad . z) z] = sqrt(2/pi) grad / ||grad|| (0.798
times the unit gradient; ``pezo.golden.methods.checks.sign_spsa_expectation``).
"""

from __future__ import annotations

import warnings

import numpy as np

from pezo.golden.engine.int8 import round_half_up as _round
from pezo.golden.engine.int8 import round_shift
from pezo.golden.losses import cross_entropy
from pezo.golden.methods.base import StepStats
from pezo.golden.methods.nets import forward_macs, layers_of, weight_name
from pezo.golden.zo.families import make_sampler

Z_BITS = 8
Z_MAX_Q = (1 << (Z_BITS - 1)) - 1
Z_STEPS = {"pow2": 2.0**-5, "one-q": 1.0 / 36.0, "literal": 3.5 / 127.0}
UPDATE_SHIFT = 24


class LiteralScaleWarning(UserWarning):
    """Delta_z * 1_q != 1: the paper's literal requantisation shrinks the weights every call."""


def quantize_activations(a: np.ndarray, bits: int) -> tuple[np.ndarray, float]:
    """(a_q int64, Delta_a): per-tensor symmetric, Delta_a = max|a| / (2^(bits-1) - 1) (1 if a == 0)."""
    top = (1 << (bits - 1)) - 1
    peak = float(np.max(np.abs(a))) if a.size else 0.0
    step = peak / top if peak > 0 else 1.0
    return np.clip(_round(a / step), -top, top), step


class SignMSPSA:
    """QZO-FF on the MLP ``task.start`` (module docstring); ``self.wq`` are the integer weights."""

    def __init__(self, config, task):
        self.config, self.task = config, task
        self.layers = layers_of(task.start)
        bits = config.weight_bits
        self.w_top = (1 << (bits - 1)) - 1
        self.delta_w, self.wq, self.eps_q = [], [], []
        self.delta_z = Z_STEPS[config.z_scale]
        self.one_q = int(round(1.0 / self.delta_z))
        for layer in range(self.layers):
            w = task.start[weight_name(layer)].astype(np.float64)
            dw = float(np.max(np.abs(w))) / self.w_top
            self.delta_w.append(dw)
            self.wq.append(np.clip(_round(w / dw), -self.w_top, self.w_top))
            eps_q = int(_round(config.epsilon / dw))
            if eps_q == 0:
                raise ValueError(
                    f"eps={config.epsilon:g} rounds to 0 weight LSBs for {weight_name(layer)} at "
                    f"weight_bits={bits} (max|w| = {dw * self.w_top:.4g}, Delta_w = {dw:.3g}): eps must "
                    f"be >= Delta_w/2 = {dw / 2:.3g}, or use more weight bits (the paper's 16w8a; its "
                    f"8-bit weights do not train for exactly this reason)"
                )
            self.eps_q.append(eps_q)
        if config.z_scale == "literal":
            warnings.warn(
                f"z_scale='literal': Delta_z * 1_q = {self.delta_z * self.one_q:.5f} != 1, so each of the "
                f"three in-place requantisations per perturbation scales every weight by that factor "
                f"(Stepping Forward's printed constants; use 'pow2')",
                LiteralScaleWarning,
                stacklevel=3,
            )
        self.sizes = [w.size for w in self.wq]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        dim = int(self.offsets[-1])
        self.sampler = config.sampler(dim) or make_sampler("gaussian", dim, seed=config.seed + 1)
        self.trainable_params = dim
        self.zero_updates = 0

    # -- forward ----------------------------------------------------------------------------------
    def _logits(self, weights, x) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        for layer, (w, dw) in enumerate(zip(weights, self.delta_w)):
            aq, da = quantize_activations(a, self.config.act_bits)
            a = (aq @ w.T).astype(np.float64) * (da * dw)
            if layer < self.layers - 1:
                a = np.maximum(a, 0.0)
        return a

    def _z(self, index: int) -> list[np.ndarray]:
        z = self.sampler.segment(index, 0, self.sampler.dim).astype(np.float64)
        zq = np.clip(_round(z / self.delta_z), -Z_MAX_Q, Z_MAX_Q)
        return [zq[a:b].reshape(w.shape) for a, b, w in zip(self.offsets[:-1], self.offsets[1:], self.wq)]

    def _literal(self, zq, k: int) -> None:
        """The paper's PerturbParameters as printed: w <- round(Delta_z (w 1_q + k eps_q z_q)), in place."""
        for layer, z in enumerate(zq):
            w = self.wq[layer]
            self.wq[layer] = np.clip(
                _round(self.delta_z * (w * self.one_q + k * self.eps_q[layer] * z)), -self.w_top, self.w_top
            )

    def step(self, step, next_batch):
        cfg, m = self.config, self.config.n_queries
        acc = [np.zeros_like(w) for w in self.wq]
        losses, macs = [], 0
        for i in range(m):
            x, y = next_batch()
            zq = self._z(step * m + i)
            if cfg.z_scale == "literal":
                self._literal(zq, 1)
                plus = cross_entropy(self._logits(self.wq, x), y)
                self._literal(zq, -2)
                minus = cross_entropy(self._logits(self.wq, x), y)
                self._literal(zq, 1)
            else:
                deltas = [_round(e * z * self.delta_z) for e, z in zip(self.eps_q, zq)]
                plus = cross_entropy(
                    self._logits([np.clip(w + d, -self.w_top, self.w_top) for w, d in zip(self.wq, deltas)], x), y
                )
                minus = cross_entropy(
                    self._logits([np.clip(w - d, -self.w_top, self.w_top) for w, d in zip(self.wq, deltas)], x), y
                )
            sign = int(np.sign(np.float64(plus) - np.float64(minus)))
            for a, z in zip(acc, zq):
                a += sign * z
            losses += [plus, minus]
            macs += 2 * forward_macs(self.task.sizes, len(y))
        lr = cfg.lr_at(step)
        for layer, a in enumerate(acc):
            factor = int(np.floor(lr * self.delta_z / (self.delta_w[layer] * m) * (1 << UPDATE_SHIFT) + 0.5))
            update = round_shift(factor * a, UPDATE_SHIFT)
            self.zero_updates += int(factor == 0)
            self.wq[layer] = np.clip(self.wq[layer] - update, -self.w_top, self.w_top)
        return StepStats(float(np.mean(losses)), 2 * m, macs)

    def logits(self, x):
        return self._logits(self.wq, x)

    def state(self):
        return [w.copy() for w in self.wq]

    def load_state(self, state):
        self.wq = [w.copy() for w in state]

    def describe(self):
        return {
            "m": self.config.n_queries,
            "weight_bits": self.config.weight_bits,
            "act_bits": self.config.act_bits,
            "z_bits": Z_BITS,
            "z_scale": self.config.z_scale,
            "delta_z": self.delta_z,
            "one_q": self.one_q,
            "delta_z_times_one_q": self.delta_z * self.one_q,
            "eps_q": self.eps_q,
            "delta_w": self.delta_w,
            "sampler": self.sampler.describe(),
        }
