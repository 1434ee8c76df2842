"""Losses shared by the golden trainer (``pezo.golden.zo``) and the seed methods (``pezo.golden.methods``).

Both are float64 log-softmax cross-entropies of (float32) logits; integer losses stay with their
number formats (``pezo.golden.methods.niti.cross_entropy_int8``).
"""

from __future__ import annotations

import numpy as np


def example_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-example cross-entropy (float64 log-softmax of the logits)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels]


def cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy (float64 log-softmax of float32 logits)."""
    return float(example_cross_entropy(logits, labels).mean())


BLOWUP_FACTOR = 1000.0
"""A run has blown up when a step's loss exceeds ``BLOWUP_FACTOR * max(start, 1)``, start = its first step's
loss (``check_blowup``). Why: the cross-entropies start near ln C (0.69 for two classes, 2.3 for ten) and a
run that trains, or merely fails to, stays within a few times that (measured: every family's and seed
method's default run within 1.2x, MeZO with eps 100 within 3.4x); 1000x means logit margins of about a
thousand nats on wrong answers, which only weights driven far out by the update reach (lr 1e6: 0.69 -> 1e8
in one step). ``max(start, 1)``: a small start loss (a probe head) may rise to a few nats without tripping."""
GROWING_FAMILIES = ("naive-int",)
"""Families whose loss grows by design: naive-int's raw URNG integers (|z| up to 2^(b-1) - 1, thousands of
times MeZO's norm) put the +-eps passes' loss 10^4-10^5 x its start (PeZO Table 3's collapsing row, a result
rather than a setting error); only a non-finite loss ends their runs."""


class LossBlowUp(FloatingPointError):
    """A finite loss ``BLOWUP_FACTOR``-fold over its start at ``step``: the run diverged (``symptom`` says how)."""

    def __init__(self, step: int, start: float, loss: float):
        self.step, self.start, self.loss = step, start, loss
        self.symptom = f"the loss grew from {start:.3g} to {loss:.3g}, over {BLOWUP_FACTOR:g}x max(its start, 1)"
        super().__init__(f"loss blew up at step {step}: {self.symptom}")


def check_blowup(step: int, start: float, loss: float, family: str | None = None) -> None:
    """LossBlowUp if ``loss`` (at ``step``) exceeds ``BLOWUP_FACTOR * max(start, 1)``; never for a family in
    ``GROWING_FAMILIES``. A ``start`` or ``loss`` that is not a finite number raises ValueError naming it (the
    trainers stop on a non-finite loss before they ask; NaN compares false and would pass silently)."""
    for name, value in (("start", start), ("loss", loss)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not np.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r} (a non-finite loss ends a run first)")
    if family not in GROWING_FAMILIES and loss > BLOWUP_FACTOR * max(start, 1.0):
        raise LossBlowUp(step, start, loss)
