"""Evaluation and screening helpers of the whole-network INT8 trainer (``pezo.golden.zo.int8_net``): the
engine's inference over a split, its accuracy, the logit exponent, the host's checkpoint average."""

from __future__ import annotations

import numpy as np

from pezo.golden.engine.network import NetConfig, NetEngine


def engine_logits(engine: NetEngine, x) -> np.ndarray:
    """``NetEngine.infer`` over any number of examples: engine batches, the last padded with zeros."""
    x = np.asarray(x, dtype=np.int64)
    b = engine.config.array.batch
    out = []
    for s in range(0, len(x), b):
        chunk = x[s : s + b]
        n = len(chunk)
        if n < b:
            chunk = np.concatenate([chunk, np.zeros((b - n, x.shape[1]), dtype=np.int64)])
        out.append(engine.infer(chunk)[:n])
    return np.concatenate(out)


def engine_accuracy(engine: NetEngine, x, y) -> float:
    return float((engine_logits(engine, x).argmax(axis=1) == np.asarray(y)).mean())


def logit_exponent(net: NetConfig, act_exponent: int) -> int:
    """The power of two one logit LSB is worth: s_x + sum of the layers' weight exponents + sum of the
    hidden layers' shifts (a hidden activation LSB is worth 2^(s_in + s_w + shift))."""
    return act_exponent + sum(l.weight_exponent for l in net.layers) + sum(l.shift for l in net.layers[:-1])


def average_weights(checkpoints) -> np.ndarray:
    """The host's checkpoint average (``NetTrainConfig.average_last``): the mean of int8 weight vectors,
    rounded half up (floor(mean + 1/2)); always within [-127, 127]."""
    stack = np.asarray(checkpoints, dtype=np.int64)
    if stack.ndim != 2 or len(stack) == 0:
        raise ValueError(
            f"checkpoints must be a non-empty list of equal-length weight vectors, got shape {stack.shape}"
        )
    return np.floor_divide(2 * stack.sum(axis=0) + len(stack), 2 * len(stack))
