"""Poor Man's quantised ZO training (Zhao et al.): layer-wise RGE on a real-quantised INT8 net.

Net (Eq. 1, post-training quantised from the start weights; symmetric, no zero points, no biases):
input x_q = clip(round(x / s_0), -128, 127) with s_0 = max|x_train| / 127; layer l has int8 weights
W_q = round(W / s_w[c]) with a per-output-channel s_w[c] = max_k |W[c, k]| / 127 and a static output
scale s_y (max |pre-activation| over the training set / 127, from the float start model); its output is
y = round(acc * s_in s_w[c] / s_y) with acc = x_q . W_q exact, clamped to [0, 127] (hidden: the ReLU is
the clamp) or [-128, 127] (logits, dequantised for the float cross-entropy). All rounding: half up.

Step (Algorithm 1, with the digest's errata): one clean forward (per-sample losses l_n, every layer's
input and output kept), then for each trained layer i in order:

* **weight perturbation** when d_w < d_a (or forced): Q queries xi_q in {-1, +1}^{d_w}, shared by the
  batch; l_q = mean loss of the suffix forward from layer i with W_q + mu xi_q (clamped, a copy: the
  restore is exact); g_W = (1/Q) sum_q (l_q - mean l_n) / mu xi_q; GNS = Q / (Q + d_w - 1);
* **node perturbation** otherwise: xi_q in {-1, +1}^{N x d_a}, one per sample, added to the layer's
  int8 output where it is not saturated (the code's binary mask), clamped; l_{q,n} from the suffix
  forward from layer i+1; g_z[n] = (1/Q) sum_q (l_{q,n} - l_n) / mu xi_{q,n}; the chain rule
  g_W[c, k] = (1/N) sum_n g_z[n, c] x_q[n, k] s_in s_w[c] / s_y (Eq. 13 with the factor the paper
  drops); GNS = NQ / (NQ + d_a - 1);
* **Eq. 11 update**: W_q <- clip(W_q - round(lr * GNS * g_W / s_w[c]^2), -127, 127) (QAS: 1/s^2).

Later layers use the clean activations of the old weights (global synchronisation, line 35).
Perturbations: XORShift32 Rademacher (``pezo.golden.methods.xorshift``), one stream per (step, layer), drawn per
query, then per sample, then per element; a plugged family gives xi = +1 where z >= 0 else -1.

Block selection (``block``): ``all`` trains every layer; an index trains that layer; ``adaptive``
(Sec. 3.3) first trains each layer alone for one epoch of steps on a copy, scores it by its validation
accuracy gain, restores the start weights and keeps the best (its forward passes are counted).
"""

from __future__ import annotations

import numpy as np

from pezo.golden.engine.int8 import round_half_up as _round
from pezo.golden.losses import example_cross_entropy as per_sample_ce
from pezo.golden.methods.base import StepStats, accuracy
from pezo.golden.methods.nets import forward as float_forward
from pezo.golden.methods.nets import forward_macs, layers_of, weight_name
from pezo.golden.methods.xorshift import XorShiftRademacherSampler

SELECTION_INDEX = 1 << 40
"""Perturbation indices of the block-selection trial epochs (disjoint from the training steps)."""


class PoorMans:
    """Poor Man's training (module docstring); ``self.wq`` are the int8 weights."""

    def __init__(self, config, task):
        self.config, self.task = config, task
        self.layers = layers_of(task.start)
        x = task.x_train.astype(np.float64)
        self.s_in0 = float(np.max(np.abs(x))) / 127
        self.wq, self.s_w, self.s_y = [], [], []
        _, inputs = float_forward(task.start, task.x_train)
        for layer in range(self.layers):
            w = task.start[weight_name(layer)].astype(np.float64)
            sw = np.max(np.abs(w), axis=1) / 127
            sw[sw == 0] = 1.0
            self.s_w.append(sw)
            self.wq.append(np.clip(_round(w / sw[:, None]), -127, 127))
            pre = inputs[layer] @ task.start[weight_name(layer)].T
            self.s_y.append(max(float(np.max(np.abs(pre))), 1e-12) / 127)
        self.trainable_params = sum(w.size for w in self.wq)
        self.modes = [self.mode(i) for i in range(self.layers)]
        self.samplers = {}
        self.chosen = (
            None
            if config.block == "adaptive"
            else (list(range(self.layers)) if config.block == "all" else [config.block])
        )
        if config.block != "all" and not isinstance(config.block, str) and config.block >= self.layers:
            raise ValueError(f"block must be in 0..{self.layers - 1}, got {config.block}")
        self.selection = {}
        self.estimates: dict[int, np.ndarray] = {}  # layer -> its last gradient estimate (W_q units)

    def mode(self, layer: int) -> str:
        """'wp' or 'np': the paper's d_w < d_a rule (``perturbation=adaptive``) or the forced one."""
        forced = self.config.perturbation
        if forced != "adaptive":
            return "wp" if forced == "weight" else "np"
        return "wp" if self.wq[layer].size < self.wq[layer].shape[0] else "np"

    # -- the integer forward -----------------------------------------------------------------------
    def _layer(self, layer: int, a: np.ndarray, s_in: float, w=None) -> tuple[np.ndarray, np.ndarray]:
        """(clamped int8 output, non-saturation mask) of ``layer`` on int input ``a`` at scale ``s_in``."""
        w = self.wq[layer] if w is None else w
        y = _round((a @ w.T) * (s_in * self.s_w[layer] / self.s_y[layer])[None, :])
        lo = 0 if layer < self.layers - 1 else -128
        return np.clip(y, lo, 127), (y >= lo) & (y <= 127)

    def _scale_in(self, layer: int) -> float:
        return self.s_in0 if layer == 0 else self.s_y[layer - 1]

    def _suffix(self, layer: int, a: np.ndarray, w=None) -> np.ndarray:
        """Float logits of the forward from ``layer`` on its int input ``a`` (``w`` replaces its weights)."""
        for i in range(layer, self.layers):
            a, _ = self._layer(i, a, self._scale_in(i), w if i == layer else None)
        return a * self.s_y[-1]

    def quantize_input(self, x) -> np.ndarray:
        return np.clip(_round(np.asarray(x, dtype=np.float64) / self.s_in0), -128, 127)

    def logits(self, x):
        return self._suffix(0, self.quantize_input(x))

    # -- perturbations ----------------------------------------------------------------------------
    def _signs(self, step: int, layer: int, shape: tuple) -> np.ndarray:
        size = int(np.prod(shape))
        key = (layer, size)
        if key not in self.samplers:
            sampler = self.config.sampler(size, salt=layer)
            if sampler is None:
                sampler = XorShiftRademacherSampler(size, seed=(self.config.seed * 64 + layer) % (2**32 - 1) + 1)
            self.samplers[key] = sampler
        z = self.samplers[key].segment(step, 0, size)
        return np.where(z >= 0, 1, -1).astype(np.int64).reshape(shape)

    # -- one step ---------------------------------------------------------------------------------
    def _train_layers(self, index: int, lr: float, x, y, layers) -> StepStats:
        """Estimate and update ``layers`` on (x, y) with perturbation ``index`` and learning rate ``lr``."""
        cfg, q = self.config, self.config.n_queries
        n = len(y)
        a = self.quantize_input(x)
        inputs, outputs, masks = [], [], []
        for i in range(self.layers):
            inputs.append(a)
            a, mask = self._layer(i, a, self._scale_in(i))
            outputs.append(a)
            masks.append(mask)
        clean = per_sample_ce(a * self.s_y[-1], y)
        passes, macs = 1, forward_macs(self.task.sizes, n)
        for i in layers:
            w, sw, s_in = self.wq[i], self.s_w[i], self._scale_in(i)
            if self.modes[i] == "wp":
                mu, d = cfg.mu_weight, w.size
                xi = self._signs(index, i, (q,) + w.shape)
                grad = np.zeros(w.shape)
                for k in range(q):
                    lq = per_sample_ce(self._suffix(i, inputs[i], np.clip(w + mu * xi[k], -127, 127)), y).mean()
                    grad += (lq - clean.mean()) / mu * xi[k]
                grad /= q
                gns = q / (q + d - 1)
                macs += q * forward_macs(self.task.sizes, n, i)
            else:
                mu, d = cfg.mu_node, w.shape[0]
                xi = self._signs(index, i, (q, n, d))
                lo = 0 if i < self.layers - 1 else -128
                gz = np.zeros((n, d))
                for k in range(q):
                    pert = np.clip(outputs[i] + mu * xi[k] * masks[i], lo, 127)
                    if i + 1 < self.layers:
                        lq = per_sample_ce(self._suffix(i + 1, pert), y)
                    else:
                        lq = per_sample_ce(pert * self.s_y[-1], y)
                    gz += ((lq - clean) / mu)[:, None] * xi[k] * masks[i]
                gz /= q
                grad = (gz.T @ inputs[i]) / n * (s_in * sw / self.s_y[i])[:, None]
                gns = n * q / (n * q + d - 1)
                macs += q * forward_macs(self.task.sizes, n, i + 1)
            passes += q
            self.estimates[i] = grad
            update = _round(lr * gns * grad / (sw[:, None] ** 2))
            self.wq[i] = np.clip(w - update, -127, 127)
        return StepStats(float(clean.mean()), passes, macs)

    def _select_block(self, next_batch) -> StepStats:
        """Sec. 3.3: one epoch of steps per candidate layer, keep the best validation gain."""
        start = self.state()
        base = accuracy(self, self.task.x_val, self.task.y_val)
        epoch = max(1, len(self.task.y_train) // self.config.batch_size)
        total = StepStats(0.0, 0, 0)
        gains = {}
        for layer in range(self.layers):
            for s in range(epoch):
                x, y = next_batch()
                stats = self._train_layers(
                    SELECTION_INDEX + layer * epoch + s, self.config.learning_rate, x, y, [layer]
                )
                total.forward_passes += stats.forward_passes
                total.forward_macs += stats.forward_macs
            gains[layer] = accuracy(self, self.task.x_val, self.task.y_val) - base
            self.load_state(start)
        best = max(gains, key=lambda k: (gains[k], -k))
        self.chosen = [best]
        self.selection = {"gains": {str(k): v for k, v in gains.items()}, "chosen": best, "steps_per_block": epoch}
        return total

    def step(self, step, next_batch):
        extra = self._select_block(next_batch) if self.chosen is None else None
        x, y = next_batch()
        stats = self._train_layers(step, self.config.lr_at(step), x, y, self.chosen)
        if extra is not None:
            stats.forward_passes += extra.forward_passes
            stats.forward_macs += extra.forward_macs
        return stats

    def state(self):
        return [w.copy() for w in self.wq]

    def load_state(self, state):
        self.wq = [w.copy() for w in state]

    def describe(self):
        out = {
            "modes": self.modes,
            "queries_per_layer": self.config.n_queries,
            "mu_weight": self.config.mu_weight,
            "mu_node": self.config.mu_node,
            "block": self.config.block,
            "trained_layers": self.chosen,
            "selection": self.selection,
            "d_w": [int(w.size) for w in self.wq],
            "d_a": [int(w.shape[0]) for w in self.wq],
        }
        sampler = next(iter(self.samplers.values()), None)
        out["sampler"] = sampler.describe() if sampler else {"family": "xorshift-rademacher"}
        return out
