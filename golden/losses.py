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
