"""The engine's on-chip loss and projected gradient (twin of the loss unit in ``hw.engine.net_engine``).

**Loss** -- the Crammer-Singer multi-class hinge on the int32 logits of one forward pass::

    L = sum_b max(0, margin + max_{j != y_b} z[b, j] - z[b, y_b])        (exact integer, >= 0)

Why this loss and not ElasticZO-INT8's integer cross-entropy (Eq. 12 of ``digest-elasticzo.md``):

* it is exact -- no log2(e) constant, no power-of-two exponential, no clz-logarithm -- so the sign of
  L+ - L- is the sign of the loss the trainer defines (ElasticZO reports ~5 % wrong signs for its
  approximation), and the difference has a magnitude the scaled-g mode can use;
* each pass's loss depends on that pass's logits alone (ElasticZO's joint offset needs both passes), so
  it streams: the logits of one example leave the PE array one output after another, and the loss
  unit keeps, per array row, the label's logit and the running maximum of the others -- one compare,
  one subtract and one add per logit, no multiplier, no logit buffer, no extra pass;
* it is the standard multi-class SVM loss; for two classes it is the binary hinge.

``margin`` is in logit LSBs (a logit is worth ``2^(s_x + s_w)`` of the last layer). Widths: a logit fits
int32, so one example's term is < 2^33 + margin and the batch sum fits ``LOSS_BITS`` unsigned bits for
every batch the engine accepts (``MAX_BATCH``).

**g** (the Q8.16 update scale of ``golden.engine.zo_engine``), from d = L+ - L-:

* ``sign``   -- sign-SPSA: g = sign(d) * g_lr (g_lr: Q8.16, > 0); d = 0 gives g = 0;
* ``scaled`` -- the fixed-point magnitude: g = sat(round_shift(d, g_shift), G_MIN, G_MAX) (round half
  up; lr / (2 epsilon) as a power of two, the shift PeZO's hardware already has);
* ``host``   -- the host writes g every step (the engine computes the losses anyway).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pezo.golden.config import check_int
from pezo.golden.engine.backprop import DEFAULT_BP_BITS, MAX_LAYERS, check_bp_bits
from pezo.golden.engine.ops import GMode, codes
from pezo.golden.engine.zo_engine import G_MAX, G_MIN, MAX_BATCH, WD_EVERY_RANGE, check_wd_shift
from pezo.golden.rounding import round_shift

G_MODE_CODES = codes(GMode)
"""``golden.engine.ops.GMode`` by name (plain ints): {"host": 0, "sign": 1, "scaled": 2}."""
LOSS_MODES = tuple(G_MODE_CODES)
LOSS_BITS = 48
MARGIN_BITS = 24
MAX_MARGIN = (1 << (MARGIN_BITS - 1)) - 1
G_SHIFT_RANGE = (0, 47)
assert MAX_BATCH * ((1 << 33) + MAX_MARGIN) < (1 << LOSS_BITS)


@dataclass(frozen=True)
class LossConfig:
    """Run-time registers of the on-chip loss and update: ``mode`` (host | sign | scaled), ``margin``
    (logit LSBs, 0..2^23-1), ``g_lr`` (Q8.16, 1..G_MAX; sign mode), ``g_shift`` (0..47; scaled mode),
    ``wd_shift`` (0..7: the update's integer weight decay ``w -= round_shift(w, wd_shift)``, every mode;
    0 = off, ``golden.engine.zo_engine.updated_weights``), ``wd_every`` (1..255: the decay acts on every
    ``wd_every``-th update only, counted by the engine's decay counter, ``golden.engine.network.NetEngine``)."""

    mode: str = "sign"
    margin: int = 256
    g_lr: int = 1 << 14
    g_shift: int = 8
    wd_shift: int = 0
    wd_every: int = 1
    split: int | None = None
    bp_bits: int = DEFAULT_BP_BITS

    def __post_init__(self):
        if self.mode not in LOSS_MODES:
            raise ValueError(f"loss mode must be one of {', '.join(LOSS_MODES)}, got {self.mode!r}")
        check_int("margin", self.margin, 0, MAX_MARGIN)
        check_int("g_lr", self.g_lr, 1, G_MAX)
        check_int("g_shift", self.g_shift, *G_SHIFT_RANGE)
        check_wd_shift(self.wd_shift)
        check_int("wd_every", self.wd_every, *WD_EVERY_RANGE)
        if self.split is not None:
            check_int("split", self.split, 0, MAX_LAYERS)
        check_bp_bits(self.bp_bits)

    @property
    def on_chip(self) -> bool:
        return self.mode != "host"


def hinge_terms(logits, labels, margin: int) -> np.ndarray:
    """Per-example max(0, margin + max_{j != y} z_j - z_y) (int64 [batch]); logits [batch, outputs >= 2]."""
    z = np.asarray(logits, dtype=np.int64)
    y = np.asarray(labels, dtype=np.int64)
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"the hinge loss needs logits [batch, outputs >= 2], got shape {z.shape}")
    if y.shape != (z.shape[0],) or y.min(initial=0) < 0 or y.max(initial=0) >= z.shape[1]:
        raise ValueError(f"labels must be [batch] integers in 0..{z.shape[1] - 1}")
    rows, rival = _strongest_rival(z, y)
    return np.maximum(0, int(margin) + z[rows, rival] - z[rows, y])


def _strongest_rival(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row indices, the first maximum of each row's logits other than its label): the loss unit's running
    maximum, lowest index on ties."""
    rows = np.arange(len(y))
    others = z.copy()
    others[rows, y] = np.iinfo(np.int64).min
    return rows, others.argmax(axis=1)


def hinge_error(logits, labels, margin: int) -> np.ndarray:
    """The hinge's subgradient per logit in {-1, 0, +1} (int64 [batch, outputs]): for an example whose
    ``hinge_terms`` entry is positive, +1 at its strongest rival and -1 at its label; 0 elsewhere (the logits'
    error of the backprop tail, ``golden.engine.backprop``)."""
    z = np.asarray(logits, dtype=np.int64)
    y = np.asarray(labels, dtype=np.int64)
    rows, rival = _strongest_rival(z, y)
    active = int(margin) + z[rows, rival] - z[rows, y] > 0
    e = np.zeros_like(z)
    e[rows[active], rival[active]] = 1
    e[rows[active], y[active]] = -1
    return e


def hinge_loss(logits, labels, margin: int) -> int:
    """The pass's loss L: the sum of ``hinge_terms`` over the batch (>= 0, < 2^LOSS_BITS)."""
    return int(hinge_terms(logits, labels, margin).sum())


def onchip_g(loss_plus: int, loss_minus: int, config: LossConfig) -> int:
    """The Q8.16 g the engine forms from the two losses (module docstring); 0 in host mode."""
    d = int(loss_plus) - int(loss_minus)
    if config.mode == "sign":
        return (d > 0) * config.g_lr - (d < 0) * config.g_lr
    if config.mode == "scaled":
        return int(min(max(int(round_shift(np.int64(d), config.g_shift)), G_MIN), G_MAX))
    return 0
