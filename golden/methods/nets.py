"""The float32 MLP every ZO method of ``pezo.golden.methods`` trains, with NumPy backprop for any tail.

A net of sizes ``[n_0, n_1, ..., n_L]`` has L fully connected layers ``fc1..fcL`` (``fc{i}.weight`` of
shape [n_i, n_{i-1}], no biases: NITI's INT8 nets have none, and one function class for every method
keeps the comparison fair) with a ReLU after every layer but the last. Layer l (0-based) maps its
input ``inputs[l]`` to ``pre[l] = inputs[l] @ W_l^T``; ``inputs[l+1] = relu(pre[l])``; logits =
``pre[L-1]``. Loss: mean softmax cross-entropy (float64 log-softmax, ``pezo.golden.losses``).

``backward(params, inputs, dlogits, first)`` returns the gradients of layers ``first..L-1`` only, from
the cached ``inputs`` of one forward pass: ElasticZO's BP tail (first = C) and Full BP (first = 0).
MACs of a forward from layer l: ``batch * sum_{j >= l} n_j * n_{j+1}`` (``forward_macs``).
"""

from __future__ import annotations

import numpy as np

from pezo.golden.config import check_int


def weight_name(layer: int) -> str:
    return f"fc{layer + 1}.weight"


def check_sizes(sizes) -> tuple[int, ...]:
    sizes = tuple(sizes)
    if len(sizes) < 2:
        raise ValueError(f"sizes must list at least an input and an output width, got {sizes!r}")
    for i, n in enumerate(sizes):
        check_int(f"sizes[{i}]", n, 1, 1 << 16)
    return sizes


def init_mlp(sizes, seed: int) -> dict[str, np.ndarray]:
    """Xavier-uniform float32 weights (NITI's initialisation, before quantisation), seeded."""
    sizes = check_sizes(sizes)
    rng = np.random.default_rng([seed, 0x1417])
    params = {}
    for layer, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        params[weight_name(layer)] = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
    return params


def layers_of(params) -> int:
    n = 0
    while weight_name(n) in params:
        n += 1
    return n


def forward(params, x: np.ndarray, first: int = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    """(logits, inputs): ``x`` is the input of layer ``first``; ``inputs[l - first]`` that of layer l."""
    n = layers_of(params)
    inputs, h = [], np.asarray(x, dtype=np.float32)
    for layer in range(first, n):
        inputs.append(h)
        h = h @ params[weight_name(layer)].T
        if layer < n - 1:
            h = np.maximum(h, 0)
    return h, inputs


def softmax_grad(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """d(mean cross-entropy)/d(logits): (softmax - onehot) / batch, float32."""
    z = logits.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1.0
    return (p / len(labels)).astype(np.float32)


def backward(params, inputs: list[np.ndarray], dlogits: np.ndarray, first: int) -> dict[str, np.ndarray]:
    """Gradients of layers ``first..L-1`` from a forward pass that started at layer ``start`` <= first,
    whose per-layer inputs are ``inputs`` (``inputs[-1]`` is the last layer's)."""
    n = layers_of(params)
    start = n - len(inputs)
    if not start <= first <= n:
        raise ValueError(f"first must be in {start}..{n}, got {first}")
    grads, err = {}, dlogits
    for layer in range(n - 1, first - 1, -1):
        a = inputs[layer - start]
        grads[weight_name(layer)] = err.T @ a
        if layer > first:
            err = (err @ params[weight_name(layer)]) * (a > 0)
    return grads


def forward_macs(sizes, batch: int, first: int = 0) -> int:
    """Multiply-accumulates of one forward pass from layer ``first`` for ``batch`` examples."""
    sizes = check_sizes(sizes)
    return batch * sum(a * b for a, b in zip(sizes[first:-1], sizes[first + 1 :]))


class Adam:
    """Adam (Kingma & Ba) on a dict of float32 tensors: the paper's FP32 pre-training optimiser."""

    def __init__(self, params, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8):
        self.params, self.lr, self.b1, self.b2, self.eps = params, lr, beta1, beta2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, grads) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for k, g in grads.items():
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * g * g
            self.params[k] -= (self.lr * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + self.eps)).astype(np.float32)
