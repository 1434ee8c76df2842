"""The float linear probe: multinomial logistic regression on frozen sentence embeddings.

``logits = scale * (x W^T + b)`` (the trainer's head), fitted by L-BFGS (float64) on the mean
cross-entropy plus ``l2 / (2 n) * ||W||^2`` (no penalty on b). Deterministic: it starts from zeros.
Used as a head initialisation (``head_init="probe"``) and as the float reference the INT8 head is
compared with.
"""

from __future__ import annotations

import numpy as np


def fit_linear_probe(
    x: np.ndarray, labels: np.ndarray, classes: int, scale: float = 20.0, l2: float = 1.0, max_iter: int = 500
) -> tuple[np.ndarray, np.ndarray]:
    """(W [classes, H], b [classes]) float32 minimising the regularised cross-entropy."""
    from scipy.optimize import minimize

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    n, h = x.shape
    if n == 0 or len(y) != n:
        raise ValueError(f"x and labels must have the same non-zero length, got {n} and {len(y)}")
    if l2 < 0:
        raise ValueError(f"l2 must be >= 0, got {l2}")
    rows = np.arange(n)

    def objective(w):
        weight, bias = w[: classes * h].reshape(classes, h), w[classes * h :]
        z = scale * (x @ weight.T + bias)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.log(p[rows, y]).mean() + 0.5 * l2 / n * float((weight * weight).sum())
        g = p
        g[rows, y] -= 1
        g *= scale / n
        grad_w = g.T @ x + l2 / n * weight
        return loss, np.concatenate([grad_w.ravel(), g.sum(axis=0)])

    result = minimize(
        objective, np.zeros(classes * h + classes), jac=True, method="L-BFGS-B", options={"maxiter": max_iter}
    )
    w = result.x
    return w[: classes * h].reshape(classes, h).astype(np.float32), w[classes * h :].astype(np.float32)


#: The documented L2 grid the probe baselines search on the validation split (never test).
L2_GRID: tuple[float, ...] = tuple(float(v) for v in np.logspace(-3, 5, 17))


def fit_linear_probe_val(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    classes: int,
    grid: tuple[float, ...] = L2_GRID,
    scale: float = 20.0,
    max_iter: int = 500,
) -> tuple[np.ndarray, np.ndarray, float]:
    """(W, b, l2): the probe whose ``l2`` (from ``grid``) scores best on the validation split.

    Ties go to the larger ``l2`` (the simpler model). The test split is never seen here.
    """
    if not grid:
        raise ValueError("grid must be non-empty")
    x_val = np.asarray(x_val, dtype=np.float64)
    y_val = np.asarray(y_val, dtype=np.int64)
    best = None
    for l2 in sorted(grid):
        w, b = fit_linear_probe(x_train, y_train, classes, scale=scale, l2=l2, max_iter=max_iter)
        acc = float(((x_val @ w.T + b).argmax(axis=1) == y_val).mean())
        if best is None or acc >= best[0]:
            best = (acc, w, b, float(l2))
    return best[1], best[2], best[3]
