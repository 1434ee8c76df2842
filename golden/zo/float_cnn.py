"""The float backprop reference of a convolutional engine net (``digits-cnn``): the same layer program in float64
NumPy, trained by exact gradients.

**Model**: every layer of the net's program (``golden.engine.conv.Conv2D``, ``golden.engine.network.Layer``) with
the same shapes, zero padding, stride, ReLU and 2 x 2 pool (``max``: the gradient goes to the window's first
maximum; ``avg``: a quarter to each), no biases (as the int8 net), no requantisation (float); the logits are the last
dense layer's outputs. **Data**: the float inputs of ``golden.zo.net_data`` (the digits' pixel / 8 - 1, i.e. the
int8 inputs' real values), the same splits. **Training**: cross-entropy, Adam (beta 0.9 / 0.999, eps 1e-8) at
``lr``, He-normal start (seeded), the int8 trainer's batch schedule (``int8_head.batch_schedule``, same seed and
batch), ``steps`` steps; validation every ``eval_every`` steps, the reported test accuracy is the best-validation
checkpoint's (as the int8 trainer's default).
"""

from __future__ import annotations

import numpy as np

from pezo.golden.engine.conv import patch_source
from pezo.golden.engine.net_file import load_net
from pezo.golden.losses import cross_entropy
from pezo.golden.zo.int8_head import batch_schedule
from pezo.golden.zo.net_data import NetData

LR_GRID = (1e-3, 3e-3, 1e-2)
"""Adam learning rates ``float_cnn_reference`` screens on validation (``lr=None``)."""


class FloatNet:
    """The float twin of a layer program (module docstring), in the engine's layout (``golden.engine.conv``: kernel
    rows in the lane order (ky, kx, ci), activations HWC, layer 0 reading the channel-major input): ``forward`` keeps
    what ``backward`` needs."""

    def __init__(self, layers, seed: int):
        self.layers = layers
        rng = np.random.default_rng([seed, 0xC0])
        self.weights, self.index = [], []
        for i, layer in enumerate(layers):
            fan_in = layer.patch if layer.kind == "conv" else layer.inputs
            shape = (layer.out_channels, layer.patch) if layer.kind == "conv" else (layer.outputs, layer.inputs)
            self.weights.append(rng.standard_normal(shape) * np.sqrt(2.0 / fan_in))
            self.index.append(patch_source(layer, from_batch=i == 0) if layer.kind == "conv" else None)

    def forward(self, x, keep: bool = False) -> np.ndarray:
        h, self.cache = np.asarray(x, dtype=np.float64), []
        for i, (layer, w) in enumerate(zip(self.layers, self.weights)):
            if layer.kind != "conv":
                z = h @ w.T
                out = np.maximum(z, 0) if layer.relu else z
                self.cache.append((h, z))
                h = out
                continue
            b = h.shape[0]
            cols = np.concatenate([h, np.zeros((b, 1))], axis=1)[:, self.index[i]]  # [B, pixels, patch]
            z = (cols @ w.T).reshape(b, layer.conv_height, layer.conv_width, layer.out_channels)  # HWC
            a = np.maximum(z, 0) if layer.relu else z
            if layer.pool != "none":
                win = a.reshape(b, layer.conv_height // 2, 2, layer.conv_width // 2, 2, layer.out_channels)
                a = win.max(axis=(2, 4)) if layer.pool == "max" else win.mean(axis=(2, 4))
            self.cache.append((cols, z))
            h = a.reshape(b, -1)
        return h

    def backward(self, grad) -> list[np.ndarray]:
        """The weight gradients of the last ``forward`` from the logits' gradient ``grad``."""
        grads = [None] * len(self.layers)
        for i in range(len(self.layers) - 1, -1, -1):
            layer, w = self.layers[i], self.weights[i]
            if layer.kind != "conv":
                h, z = self.cache[i]
                if layer.relu:
                    grad = grad * (z > 0)
                grads[i] = grad.T @ h
                grad = grad @ w
                continue
            cols, z = self.cache[i]
            b, oh, ow, c = z.shape
            a = np.maximum(z, 0) if layer.relu else z
            _, ph, pw = layer.out_shape
            g = grad.reshape(b, ph, pw, c)
            if layer.pool != "none":
                win = a.reshape(b, oh // 2, 2, ow // 2, 2, c)
                if layer.pool == "max":
                    flat = win.transpose(0, 1, 3, 5, 2, 4).reshape(b, oh // 2, ow // 2, c, 4)
                    first = flat.argmax(axis=-1)[..., None] == np.arange(4)
                    mask = first.reshape(b, oh // 2, ow // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3)
                else:
                    mask = np.full(win.shape, 0.25)
                g = (mask * g[:, :, None, :, None, :]).reshape(b, oh, ow, c)
            if layer.relu:
                g = g * (z > 0)
            g = g.reshape(b, oh * ow, c)  # [B, pixels, out]
            grads[i] = np.einsum("bpo,bpj->oj", g, cols)
            if i:
                dcols = g @ w  # [B, pixels, patch]
                dx = np.zeros((b, layer.inputs + 1))  # the last column collects the zero padding's share
                for j in range(b):
                    np.add.at(dx[j], self.index[i], dcols[j])
                grad = dx[:, :-1]
        return grads


def softmax_grad(logits, labels) -> np.ndarray:
    """d(mean cross-entropy)/d logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1
    return p / len(labels)


def accuracy(net: FloatNet, x, y) -> float:
    return float((net.forward(x).argmax(axis=1) == np.asarray(y)).mean())


def train_float_cnn(
    net_name: str, data: NetData, seed: int, steps: int, batch: int, lr: float, eval_every: int = 250
) -> dict:
    """Adam backprop of the float twin of ``net_name`` (module docstring); the summary with ``test_accuracy``
    (best-validation checkpoint), ``best_val_accuracy``, ``lr`` and ``curve`` ({step, val_accuracy, train_loss})."""
    layers = load_net(net_name).config.layers
    net = FloatNet(layers, seed)
    x, y = data.float_x, data.y
    m = [np.zeros_like(w) for w in net.weights]
    v = [np.zeros_like(w) for w in net.weights]
    best_val, best_w, losses = accuracy(net, x["val"], y["val"]), [w.copy() for w in net.weights], []
    curve = [{"step": 0, "val_accuracy": best_val, "train_loss": None}]
    for step, rows in enumerate(batch_schedule(len(y["train"]), batch, steps, seed)):
        logits = net.forward(x["train"][rows])
        losses.append(cross_entropy(logits, y["train"][rows]))
        grads = net.backward(softmax_grad(logits, y["train"][rows]))
        t = step + 1
        for w, g, mi, vi in zip(net.weights, grads, m, v):
            mi *= 0.9
            mi += 0.1 * g
            vi *= 0.999
            vi += 0.001 * g * g
            w -= lr * (mi / (1 - 0.9**t)) / (np.sqrt(vi / (1 - 0.999**t)) + 1e-8)
        if t % eval_every == 0 or t == steps:
            val = accuracy(net, x["val"], y["val"])
            curve.append({"step": t, "val_accuracy": val, "train_loss": float(np.mean(losses[-50:]))})
            if val > best_val:
                best_val, best_w = val, [w.copy() for w in net.weights]
    net.weights = best_w
    return {
        "net": net_name,
        "method": "float backprop (Adam)",
        "seed": seed,
        "lr": lr,
        "steps": steps,
        "test_accuracy": accuracy(net, x["test"], y["test"]),
        "best_val_accuracy": best_val,
        "curve": curve,
    }


def float_cnn_reference(net_name: str, data: NetData, seed: int, steps: int, batch: int, lr: float | None = None):
    """``train_float_cnn`` at ``lr``, or at the ``LR_GRID`` rate with the best validation accuracy (ties: the
    smaller rate; the test split is never used for the choice)."""
    if lr is not None:
        return train_float_cnn(net_name, data, seed, steps, batch, lr)
    runs = [train_float_cnn(net_name, data, seed, steps, batch, rate) for rate in LR_GRID]
    best = max(runs, key=lambda r: (r["best_val_accuracy"], -r["lr"]))
    best["lr_screen"] = {str(r["lr"]): r["best_val_accuracy"] for r in runs}
    return best
