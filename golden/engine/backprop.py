"""The engine's backprop tail: ElasticZO-INT8's integer backward for the last layers, on the PE array.

**Partition** -- C in 0..L (``split``; ElasticZO's partition point, counted in layers): layers 1..C are
trained by ZO (perturbed in both passes, updated by the stream replay), layers C+1..L by backprop and
never perturbed. Names (``SPLIT_NAMES``, as ElasticZO's configurations): ``full-zo`` C = L, ``cls2``
C = L - 1 (BP on the last layer), ``cls1`` C = L - 2 (BP on the last two), ``full-bp`` C = 0 (NITI's
integer backprop alone: the accuracy ceiling of the same hardware).

**A step** (``golden.engine.network.NetEngine.train_step``):

* 0 < C < L -- both ZO passes as in full ZO, with the perturbation of the tail's weights forced to 0 (the
  stream still runs over them, so the ZO layers see exactly the stream of full ZO); the losses and g; the
  ZO update replayed over layers 1..C only (the weight decay too); then the tail below on the
  **-epsilon pass** -- its logits and the tail layers' inputs, which are what the activation buffers hold
  after the last pass (ElasticZO's reading of "the activations of the ZO passes"). The ZO update comes
  first; the two touch disjoint weights, so the order does not change the result.
* C = L -- the ZO step, unchanged (no tail). C = 0 -- one forward pass of the stored weights (no
  perturbation, no stream step, no ZO update, the decay counter untouched), then the tail over every layer.

**Error of the logits** e_L (int8 [B, N], ``golden.engine.loss.hinge_error``): the subgradient of the on-chip
hinge: for an example whose hinge term is positive, +1 at the strongest wrong class (the first maximum of the
other logits: lowest index on ties, as the loss unit's running maximum) and -1 at its label; 0 everywhere else.
Exact, no exponential and no division: the hinge is the loss the ZO part already minimises, so both parts descend
the same objective.

**Layer l backward** (l = L .. C + 1, 1-based), W_l the stored weights (before this step's update),
a_{l-1} its int8 input in the pass above (the batch x for l = 1), e_l its error:

* weight gradient ``G_l = e_l^T a_{l-1}`` -- exact int32 sums over the batch;
* error (l > C + 1 only) ``E = e_l W_l`` (exact int32), zeroed where layer l - 1's ReLU is off
  (``a_{l-1} <= 0``; a layer without ReLU passes it unchanged), then ``e_{l-1} = requantize_tensor(E)``
  (NITI: one shift for the whole batch tensor, b = bitwidth(max|E|), round half up to 7 bits);
* update ``W_l <- sat(W_l - pseudo_stochastic_round(G_l, bp_bits), -127, 127)`` (NITI's PstoShift,
  ``golden.engine.int8``: the largest |G| maps to 2^(bp_bits-1)..2^bp_bits LSB -- ``bp_bits`` is the
  learning rate, and no exponent needs tracking: every magnitude above is normalised away).

Biases are constants (as in ZO); the weight decay is the ZO update's only. The tail is dense-only: a split that
puts a convolution (``golden.engine.conv``) in it is refused naming the layer (``check_tail``); ElasticZO's cls1 /
cls2 keep the convolutions in the ZO part, and so does digits-cnn's (two dense layers after two conv layers).

The engine's RTL runs it bit for bit when generated with ``NetConfig.backprop`` (``hw.engine.bp_tail``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pezo.golden.config import check_int
from pezo.golden.engine.int8 import (
    WEIGHT_MAX,
    WEIGHT_MIN,
    exact_matmul,
    pseudo_stochastic_round,
    requantize_tensor,
    saturate,
)

SPLIT_NAMES = ("full-zo", "cls2", "cls1", "full-bp")
MAX_LAYERS = 8
"""Layers of a network the engine runs (``golden.engine.network.MAX_LAYERS`` is this)."""
BP_BITS_RANGE = (1, 7)
"""``bp_bits``: 1..7 (7: the largest gradient entry moves its weight by up to 128 LSB, the int8 range)."""
DEFAULT_BP_BITS = 3
"""``bp_bits`` where nothing else is chosen: the CLI's per-net, per-split defaults (screened on validation) are
``golden.zo.net_config.SPLIT_DEFAULTS``; 3 is the last value of ElasticZO-INT8's 5 / 4 / 3 schedule."""


def split_point(split, layers: int) -> int:
    """C for ``split`` -- a name of ``SPLIT_NAMES`` or an integer 0..``layers`` -- on a net of ``layers``
    layers, or one ValueError naming the allowed values."""
    named = {"full-zo": layers, "cls2": layers - 1, "cls1": layers - 2, "full-bp": 0}
    allowed = f"one of {', '.join(SPLIT_NAMES)} or a layer index 0..{layers}"
    if isinstance(split, str) and split.strip().lstrip("-").isdigit():
        split = int(split)
    if isinstance(split, str):
        if split not in named:
            raise ValueError(f"split must be {allowed}, got {split!r}")
        if named[split] < 0:
            raise ValueError(f"split {split!r} needs at least 2 layers; this net has {layers} (use 0..{layers})")
        return named[split]
    if isinstance(split, bool) or not isinstance(split, (int, np.integer)) or not 0 <= split <= layers:
        raise ValueError(f"split must be {allowed}, got {split!r}")
    return int(split)


def allowed_splits(layers) -> str:
    """The splits a net of the ``Layer`` / ``Conv2D`` program ``layers`` allows, in words: C from one past its last
    conv layer to L (``SPLIT_NAMES`` whose C is in that range, then the index range)."""
    count = len(layers)
    first = 1 + max((i for i, layer in enumerate(layers) if getattr(layer, "kind", "dense") == "conv"), default=-1)
    named = {"full-zo": count, "cls2": count - 1, "cls1": count - 2, "full-bp": 0}
    names = [n for n in SPLIT_NAMES if first <= named[n]]
    index = f"a layer index {first}..{count}"
    return f"one of {', '.join(names)} or {index}" if names else index


def check_tail(layers, c: int, split=None) -> int:
    """C if the tail (layers C+1..L of the ``Layer`` / ``Conv2D`` program ``layers``) is dense-only, else one
    ValueError naming the first conv layer in it and the splits this net allows (``allowed_splits``)."""
    convs = [i for i, layer in enumerate(layers) if getattr(layer, "kind", "dense") == "conv"]
    inside = [i for i in convs if i >= c]
    if inside:
        i = inside[0]
        raise ValueError(
            f"split {split if split is not None else c!r} puts layer {i} ({layers[i].describe()}) in the backprop "
            f"tail, which trains dense layers only: on this net split must be {allowed_splits(layers)} (a tail "
            "after the last conv layer)"
        )
    return c


def split_name(c: int, layers: int) -> str:
    """The name of partition C on a net of ``layers`` layers (``SPLIT_NAMES``), or ``C=<c>``."""
    names = {layers - 2: "cls1", layers - 1: "cls2", 0: "full-bp", layers: "full-zo"}
    return names.get(c, f"C={c}")


def check_bp_bits(bp_bits) -> int:
    """``bp_bits`` in 1..7, or a ValueError naming the range."""
    check_int("bp_bits", bp_bits, *BP_BITS_RANGE)
    return int(bp_bits)


@dataclass
class TailRecord:
    """What the tail computed in one step, per tail layer (index = layer, 0-based; None outside the tail):
    ``errors[l]`` the int8 error of layer l's outputs (e_{l+1} 1-based), ``gradients[l]`` the int32
    G_l, ``updates[l]`` the PSR-rounded step subtracted from W_l."""

    errors: list
    gradients: list
    updates: list


def tail_backward(layers, weights: list, inputs: list, error, split: int, bp_bits: int) -> tuple[list, TailRecord]:
    """The backprop tail (module docstring) of the layer program ``layers`` (``Layer``s) from the logits'
    error ``error`` [B, N_L]: ``weights`` the per-layer [outputs, inputs] int8 arrays (not modified),
    ``inputs[l]`` layer l's int8 input in the pass (0-based; inputs[0] is the batch). Returns the new
    per-layer weights (tail layers updated, the others the same arrays) and the ``TailRecord``."""
    count = len(layers)
    check_bp_bits(bp_bits)
    new = list(weights)
    record = TailRecord([None] * count, [None] * count, [None] * count)
    e = np.asarray(error, dtype=np.int64)
    for l in range(count - 1, split - 1, -1):
        w, a = np.asarray(weights[l], dtype=np.int64), np.asarray(inputs[l], dtype=np.int64)
        record.errors[l] = e
        grad = exact_matmul(e.T, a.T)
        step = pseudo_stochastic_round(grad, bp_bits)
        record.gradients[l], record.updates[l] = grad, step
        new[l] = saturate(w - step, WEIGHT_MIN, WEIGHT_MAX)
        if l > split:
            back = exact_matmul(e, w.T)
            if layers[l - 1].relu:
                back = np.where(a > 0, back, 0)
            e, _ = requantize_tensor(back, 0)
    return new, record
