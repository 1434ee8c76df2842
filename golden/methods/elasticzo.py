"""ElasticZO and ElasticZO-INT8 (Sugiura & Matsutani, 2025): ZO on layers 1..C, backprop on C+1..L.

FP32 (Algorithm 1). One direction per step (q = 1), index = step:

1. theta_l += eps z_l (l < C, in place), l+ = L(theta; B); theta_l -= 2 eps z_l, l- = L(theta; B) -- the
   BP layers keep their weights in both passes;
2. g = clip((l+ - l-) / (2 eps), -g_clip, g_clip) (float64);
3. merged restore + update (the paper's lines 9-10 as one pass): theta_l += (eps - lr g) z_l;
4. BP tail: the cross-entropy gradient of the **-eps pass** logits (the paper leaves the pass open; the
   buffers hold the last pass), backprop through layers L..C+1 with those activations, SGD step with
   its own learning rate ``bp_lr`` (default 0.05; the ZO part's ``lr`` default is 2e-3: with one shared
   eta, as the paper presumably used, the ZO stability bound starves the tail and Cls1 = Cls2 = Full BP).

C = L is Full ZO, C = 0 Full BP (one forward + backprop, plain SGD). z: the plugged family or Gaussian.

INT8 (Algorithm 2; NITI format, ``pezo.golden.methods.niti``). Weights int8 in [-127, 127] at a fixed per-tensor
exponent (NITI's initialisation: s = ceil(log2 max|w|) - 7, w = round-half-up(w * 127 / max|w|)), no
biases; forward: input quantised per batch, int8 x int8 -> int32, per-tensor requantisation, ReLU.

1. z_l = m (.) u per ZO layer: u uniform integers in [-r_max, r_max] (both ends included),
   m ~ Bernoulli(1 - p_zero), one PCG64 stream per (seed, step, layer) so all four calls regenerate
   the same z. With a plugged family: u = clip(round-half-up(z * r_max / 2), -r_max, r_max) of the
   family's value z (PeZO's values lie in about (-2, 2)), the mask still from PCG64;
2. theta = clamp(theta + z), forward (+); clamp(theta - 2z), forward (-); clamp(theta + z) (restore:
   clamping makes it inexact at the rails, as written in the paper);
3. g = sign(l+ - l-): float CE of the dequantised logits (``loss_sign="float"``, the paper's "INT8") or
   the integer-only Eq. 12 sign (``"integer"``, "INT8*");
4. theta_l = clamp(theta_l - PSR(g z_l, b_ZO)) per tensor (b_ZO = 1: 0, 1 or 2 LSB);
5. NITI BP tail on the -eps pass: integer loss gradient (stochastic shift from a seeded stream), FC
   backward with round-shift errors and PSR(b_BP) gradients, weights clamped.

Schedules (``MethodConfig.phase``): p_zero 0.33 / 0.5 / 0.9 and b_BP 5 / 4 / 3.
"""

from __future__ import annotations

import numpy as np

from pezo.golden.engine.int8 import exponent_for, round_half_up
from pezo.golden.losses import cross_entropy
from pezo.golden.methods.base import FloatMLPMethod, StepStats
from pezo.golden.methods.nets import backward, forward, forward_macs, layers_of, softmax_grad, weight_name
from pezo.golden.methods.niti import (
    cross_entropy_int8,
    fc_backward_int8,
    float_ce_sign,
    integer_ce_sign,
    loss_gradient_int8,
    pseudo_stochastic_round,
    quantize_tensor,
    relu_backward,
    requantize_tensor,
)
from pezo.golden.zo.families import make_sampler
from pezo.golden.zo.mezo import MeZO, MeZOConfig

P_ZERO_SCHEDULE = (0.33, 0.5, 0.9)
B_BP_SCHEDULE = (5, 4, 3)


class ElasticZO(FloatMLPMethod):
    """FP32 ElasticZO (module docstring) on the float MLP ``task.start`` (updated in place)."""

    def __init__(self, config, task):
        self.config, self.task = config, task
        self.params = task.start
        self.layers = layers_of(self.params)
        self.c = config.split_point(self.layers)
        self.zo_names = [weight_name(i) for i in range(self.c)]
        self.trainable_params = sum(v.size for v in self.params.values())
        self.mezo = self.sampler = None
        if self.c:
            dim = sum(self.params[n].size for n in self.zo_names)
            self.sampler = config.sampler(dim) or make_sampler("gaussian", dim, seed=config.seed + 1)
            self.mezo = MeZO(
                self.params,
                self.zo_names,
                self.sampler,
                MeZOConfig(lr=config.learning_rate, eps=config.epsilon, mode="inplace"),
            )

    def step(self, step, next_batch):
        x, y = next_batch()
        cfg, lr = self.config, self.config.lr_at(step)
        bp_lr = cfg.lr_at(step, cfg.bp_learning_rate)
        macs = forward_macs(self.task.sizes, len(y))
        if self.c == 0:
            logits, inputs = forward(self.params, x)
            loss, passes = cross_entropy(logits, y), 1
        else:
            eps = cfg.epsilon
            self.mezo.perturb(step, 1.0)
            plus = cross_entropy(forward(self.params, x)[0], y)
            self.mezo.perturb(step, -2.0)
            logits, inputs = forward(self.params, x)
            minus = cross_entropy(logits, y)
            g = float(np.clip((np.float64(plus) - np.float64(minus)) / (2 * eps), -cfg.g_clip, cfg.g_clip))
            self.mezo.perturb(step, (eps - lr * g) / eps)  # merged restore + update: theta += (eps - lr g) z
            loss, passes = (plus + minus) / 2, 2
        if self.c < self.layers:
            grads = backward(self.params, inputs, softmax_grad(logits, y), self.c)
            for name, grad in grads.items():
                self.params[name] -= np.float32(bp_lr) * grad
        return StepStats(loss, passes, passes * macs)

    def describe(self):
        out = {
            "split_C": self.c,
            "layers": self.layers,
            "zo_params": sum(self.params[n].size for n in self.zo_names),
            "g_clip": self.config.g_clip,
            "eps": self.config.epsilon,
            "bp_lr": self.config.bp_learning_rate,
            "bp_activations": "minus pass",
        }
        if self.sampler is not None:
            out["sampler"] = self.sampler.describe()
        return out


def niti_weights(w: np.ndarray) -> tuple[np.ndarray, int]:
    """NITI's weight quantisation: (round-half-up(w * 127 / max|w|), ceil(log2 max|w|) - 7)."""
    peak = float(np.max(np.abs(w)))
    q = round_half_up(np.asarray(w, dtype=np.float64) * (127.0 / peak))
    return np.clip(q, -127, 127), exponent_for(w)


def int8_forward(weights, exponents, x) -> tuple[np.ndarray, int, list[np.ndarray]]:
    """(int8 logits, their exponent, per-layer int8 inputs) of the NITI net on float inputs ``x``."""
    a, s = quantize_tensor(x)
    inputs = []
    for layer, (w, sw) in enumerate(zip(weights, exponents)):
        inputs.append(a)
        a, s = requantize_tensor(a @ w.T, s + sw)
        if layer < len(weights) - 1:
            a = np.maximum(a, 0)
    return a, s, inputs


class ElasticZOInt8:
    """ElasticZO-INT8 (module docstring): int8 weights ``self.weights`` at fixed ``self.exponents``."""

    def __init__(self, config, task):
        self.config, self.task = config, task
        self.layers = layers_of(task.start)
        self.c = config.split_point(self.layers)
        pairs = [niti_weights(task.start[weight_name(i)]) for i in range(self.layers)]
        self.weights = [w for w, _ in pairs]
        self.exponents = [s for _, s in pairs]
        self.trainable_params = sum(w.size for w in self.weights)
        self.samplers = [config.sampler(self.weights[i].size, salt=i) for i in range(self.c)]
        self.sign_log: list[tuple[int, int]] = []  # (float sign, integer sign) of every ZO step

    def p_zero(self, step: int) -> float:
        return P_ZERO_SCHEDULE[self.config.phase(step)] if self.config.p_zero is None else float(self.config.p_zero)

    def b_bp(self, step: int) -> int:
        return B_BP_SCHEDULE[self.config.phase(step)] if self.config.b_bp is None else self.config.b_bp

    def perturbation(self, step: int, layer: int) -> np.ndarray:
        """z_l = m (.) u of ``step`` (int64, the shape of layer ``layer``'s weights)."""
        cfg, shape = self.config, self.weights[layer].shape
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([cfg.seed, 0xE1A5, step, layer])))
        keep = rng.random(shape) >= self.p_zero(step)
        sampler = self.samplers[layer]
        if sampler is None:
            u = rng.integers(-cfg.r_max, cfg.r_max + 1, size=shape)
        else:
            z = sampler.segment(step, 0, sampler.dim).astype(np.float64).reshape(shape)
            u = np.clip(round_half_up(z * (cfg.r_max / 2.0)), -cfg.r_max, cfg.r_max)
        return np.where(keep, u, 0)

    def _perturb(self, zs, k: int) -> None:
        for layer, z in enumerate(zs):
            self.weights[layer] = np.clip(self.weights[layer] + k * z, -127, 127)

    def step(self, step, next_batch):
        x, y = next_batch()
        cfg = self.config
        macs = forward_macs(self.task.sizes, len(y))
        if self.c == 0:
            logits, s_out, inputs = int8_forward(self.weights, self.exponents, x)
            loss, passes = cross_entropy_int8(logits, s_out, y), 1
        else:
            zs = [self.perturbation(step, layer) for layer in range(self.c)]
            self._perturb(zs, 1)
            plus, s_plus, _ = int8_forward(self.weights, self.exponents, x)
            self._perturb(zs, -2)
            logits, s_out, inputs = int8_forward(self.weights, self.exponents, x)
            self._perturb(zs, 1)
            fsign = float_ce_sign(plus, s_plus, logits, s_out, y)
            isign = integer_ce_sign(plus, s_plus, logits, s_out, y)
            self.sign_log.append((fsign, isign))
            g = isign if cfg.loss_sign == "integer" else fsign
            if g:
                for layer, z in enumerate(zs):
                    update = pseudo_stochastic_round(g * z, cfg.b_zo)
                    self.weights[layer] = np.clip(self.weights[layer] - update, -127, 127)
            loss = (cross_entropy_int8(plus, s_plus, y) + cross_entropy_int8(logits, s_out, y)) / 2
            passes = 2
        if self.c < self.layers:
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([cfg.seed, 0xB9, step])))
            err, err_exp = loss_gradient_int8(logits, s_out, y, rng)
            bits = self.b_bp(step)
            for layer in range(self.layers - 1, self.c - 1, -1):
                a_in = inputs[layer]
                err_in, err_exp, grad = fc_backward_int8(err, err_exp, self.weights[layer], a_in, bits)
                self.weights[layer] = np.clip(self.weights[layer] - grad, -127, 127)
                err = relu_backward(err_in, a_in)
        return StepStats(float(loss), passes, passes * macs)

    def logits(self, x):
        logits, s, _ = int8_forward(self.weights, self.exponents, x)
        return np.ldexp(logits.astype(np.float64), s)

    def state(self):
        return [w.copy() for w in self.weights]

    def load_state(self, state):
        self.weights = [w.copy() for w in state]

    def sign_agreement(self) -> float | None:
        """Fraction of ZO steps whose integer CE sign equals the float CE sign (None before any)."""
        if not self.sign_log:
            return None
        return float(np.mean([a == b for a, b in self.sign_log]))

    def describe(self):
        out = {
            "split_C": self.c,
            "layers": self.layers,
            "weight_exponents": self.exponents,
            "r_max": self.config.r_max,
            "b_zo": self.config.b_zo,
            "loss_sign": self.config.loss_sign,
            "p_zero": self.config.p_zero if self.config.p_zero is not None else list(P_ZERO_SCHEDULE),
            "b_bp": self.config.b_bp if self.config.b_bp is not None else list(B_BP_SCHEDULE),
            "sign_agreement": self.sign_agreement(),
            "sign_steps": len(self.sign_log),
            "zero_signs": int(sum(1 for f, _ in self.sign_log if f == 0)),
        }
        sampler = next((s for s in self.samplers if s is not None), None)
        out["sampler"] = sampler.describe() if sampler else {"family": "sparse-uniform (PCG64)"}
        return out
