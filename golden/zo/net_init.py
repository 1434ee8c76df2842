"""The seeded, calibrated int8 start of the golden whole-network INT8 trainer (``pezo.golden.zo.int8_net``).

**Init** (seeded, ``np.random.default_rng([seed, 0x1417])``): ``rt-head`` starts from zero as
``int8_head`` does. Every hidden layer draws w0 ~ N(0, 1) and is scaled layer after layer on the
training inputs by the engine's own integer forward: layer l gets w = sat(round(a_l * w0), -127, 127)
with a_l chosen so that its requantised pre-activation ``round_shift(acc, shift_l)`` has standard
deviation ``init_std`` LSB (default 32: a quarter of the int8 range, so the ReLU outputs use the range
without saturating much); ``init_scale`` multiplies every a_l (1 = the calibrated start). The last layer
starts from zero (``last_init="zero"``, the default) or, calibrated, at a logit standard deviation of
``init_std * 2^7`` (the logits are not shifted; 2^7 puts them on the scale of the margin). The chosen
a_l, the weights' spread and the hidden activations' statistics are in the result (``init``). At the
digits-mlp preset shifts (10, 9) the second layer would need a weight std of ~97 LSB: 22 % of its
weights saturate at +-127 and its pre-activation std reaches ~26 LSB, not 32 (measured; 10/9 trained as
well as 10/8, where nothing saturates, and is what the three-seed evidence used).

Why the last layer starts at zero: from a random classifier every ZO step that shrinks the logits
lowers the hinge loss (a random classifier pays about 1.5 logit standard deviations beyond the
margin per example), and with fixed requantisation shifts the cheapest way to shrink them is to drive
one hidden layer's pre-activations below zero. Measured on digits-mlp (calibrated last layer, sign g):
the second hidden layer is 100 % dead after 300 steps, all logits 0, L+ = L- and g = 0 forever. From a
zero last layer the start is already at the margin and the loss falls only by classifying. The same
reasoning sets epsilon: with eps_shift <= 12 (|p| up to 2..8 LSB) the perturbed passes alone add logit
noise that the hinge penalises, and the net again learns to switch its hidden units off.
"""

from __future__ import annotations

import numpy as np

from pezo.golden.engine.conv import conv_acc, conv_output, im2col
from pezo.golden.engine.int8 import WEIGHT_MAX, WEIGHT_MIN, round_shift, saturate
from pezo.golden.engine.net_file import load_net
from pezo.golden.lm.probe import fit_linear_probe_val
from pezo.golden.zo.net_data import NetData

LOGIT_INIT_SHIFT = 7


def probe_head(h_train, y_train, h_val, y_val, classes: int) -> tuple[np.ndarray, dict]:
    """``last_init="probe"``: the float linear probe (``golden.lm.probe``, L2 chosen on the validation
    split) on the fixed int8 hidden features of the calibrated start (divided by their training RMS),
    quantised to the last layer's int8 weights: w = round(W * 127 / max|W|) (round half up). The net has
    no bias, so the probe's intercept b is dropped (for two balanced classes b is small; the start
    accuracy the trainer reports is the quantised, bias-free head's, by the engine's inference)."""
    h_train = np.asarray(h_train, dtype=np.float64)
    rms = max(float(np.sqrt(np.mean(np.square(h_train)))), 1e-12)
    h_val = np.asarray(h_val, dtype=np.float64) / rms
    w, b, l2 = fit_linear_probe_val(h_train / rms, y_train, h_val, y_val, classes)
    val = float(((h_val @ w.T + b).argmax(axis=1) == np.asarray(y_val)).mean())
    w_q = saturate(
        np.floor(np.asarray(w, dtype=np.float64) * (WEIGHT_MAX / max(float(np.abs(w).max()), 1e-12)) + 0.5),
        WEIGHT_MIN,
        WEIGHT_MAX,
    )
    return w_q, {
        "layer": "last",
        "start": "probe",
        "probe_l2": l2,
        "probe_val_accuracy": round(val, 4),
        "probe_bias_dropped": [round(float(v), 4) for v in b],
    }


def pca_directions(h, outputs: int) -> np.ndarray:
    """``hidden_init="pca"``: [V; -V] (float, ``outputs`` x inputs), V the top ``outputs / 2`` principal
    directions (unit rows, by decreasing variance) of the rows of ``h`` (the layer's int8 training inputs),
    centred -- no labels. The pair keeps every projection through the ReLU, relu(v.x) - relu(-v.x) = v.x,
    so the hidden layer starts as a lossless linear map of the inputs' top subspace (the net has no bias;
    the inputs' mean stays in the projection). Each direction's sign is fixed so that its largest |entry|
    is positive (SVD signs are arbitrary)."""
    h = np.asarray(h, dtype=np.float64)
    half = outputs // 2
    if outputs % 2 or half > min(h.shape):
        raise ValueError(
            f"pca init needs an even width of at most 2 x min(examples, inputs) = {2 * min(h.shape)}, got {outputs}"
        )
    _, _, vt = np.linalg.svd(h - h.mean(axis=0), full_matrices=False)
    v = vt[:half]
    v = v * np.where(v[np.arange(half), np.abs(v).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]
    return np.concatenate([v, -v])


def _pre_activations(net, i: int, h, w) -> np.ndarray:
    """Layer i's accumulators (no bias) on inputs ``h`` as a 2-D array [examples (x pixels), rows]: ``h @ w.T``
    for a dense layer, the im2col patches times ``w.T`` for a conv layer (float or integer ``w``)."""
    layer = net.layers[i]
    if layer.kind == "conv":
        h = im2col(h, layer, net.array.cols, from_batch=i == 0).reshape(-1, net.weight_shape(i)[1])
    return np.asarray(h) @ np.asarray(w).T


def _hidden_output(net, i: int, h, w) -> np.ndarray:
    """Layer i's int8 output on ``h`` (requantised, ReLU; a conv layer's pool too), no bias."""
    layer = net.layers[i]
    if layer.kind == "conv":
        acc = conv_acc(h, layer, w, np.zeros(layer.bias_size), net.array.cols, from_batch=i == 0)
        return conv_output(acc, layer)
    return saturate(round_shift(h @ w.T, layer.shift), 0 if layer.relu else WEIGHT_MIN, WEIGHT_MAX)


def init_weights(config, x_train: np.ndarray, data: NetData | None = None) -> tuple[list[np.ndarray], dict]:
    """The seeded, calibrated int8 start (module docstring) of ``config`` (a ``NetTrainConfig``) and its
    statistics (``last_init="probe"`` needs ``data``: the validation split chooses the probe's L2)."""
    net = config.net_config
    start = load_net(config.net)
    if start.weights is not None:  # a network file with weights (e.g. an imported ONNX model) starts from them
        return net.fit_weights(start.weights), {"start": f"file {start.name}"}
    if config.net_name == "rt-head":
        return [np.zeros(net.weight_shape(i), dtype=np.int64) for i in range(len(net.layers))], {"start": "zero"}
    if config.last_init == "probe" and data is None:
        raise ValueError("last_init='probe' needs the data (the validation split chooses the probe's L2)")
    rng = np.random.default_rng([config.seed, 0x1417])
    h = np.asarray(x_train, dtype=np.int64)
    h_val = np.asarray(data.x["val"], dtype=np.int64) if data is not None else None
    weights, stats = [], []
    last = len(net.layers) - 1
    for i, layer in enumerate(net.layers):
        w0 = rng.standard_normal(net.weight_shape(i))  # drawn for every layer: one seeded stream
        if layer.kind == "conv":
            w0[:, layer.patch :] = 0.0  # the pad lanes multiply zero inputs: start them at 0
        if i < last and config.hidden_init == "pca":
            w0 = pca_directions(h, layer.outputs)
        if i == last and config.last_init == "zero":
            weights.append(np.zeros_like(w0, dtype=np.int64))
            stats.append({"layer": i, "start": "zero"})
            break
        if i == last and config.last_init == "probe":
            w, entry = probe_head(h, data.y["train"], h_val, data.y["val"], layer.outputs)
            weights.append(w.astype(np.int64))
            stats.append(entry)
            break
        pre = _pre_activations(net, i, h.astype(np.float64), w0)
        target = config.init_std * 2.0 ** (layer.shift if i < last else LOGIT_INIT_SHIFT)
        scale = config.init_scale * target / max(float(pre.std()), 1e-12)
        w = saturate(np.floor(w0 * scale + 0.5), WEIGHT_MIN, WEIGHT_MAX)
        acc = _pre_activations(net, i, h, w)
        entry = {
            "layer": i,
            "directions": config.hidden_init if i < last else "normal",
            "scale": round(scale, 4),
            "weight_std": round(float(w.std()), 3),
            "weight_saturated": round(float(np.mean(np.abs(w) == WEIGHT_MAX)), 5),
        }
        if i < last:
            pre_q = round_shift(acc, layer.shift)
            h = _hidden_output(net, i, h, w)
            if h_val is not None:
                h_val = _hidden_output(net, i, h_val, w)
            entry.update(
                pre_std=round(float(pre_q.std()), 2),
                act_mean=round(float(h.mean()), 2),
                act_saturated=round(float(np.mean(h == WEIGHT_MAX)), 5),
                act_zero=round(float(np.mean(h == 0)), 4),
            )
        else:
            entry["logit_std"] = round(float(acc.std()), 1)
        weights.append(w)
        stats.append(entry)
    return weights, {"start": f"calibrated {config.hidden_init}", "layers": stats}
