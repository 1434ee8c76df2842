"""The float linear probe's L2 is chosen on the validation split (never test)."""

import numpy as np
import pytest

from pezo.golden.lm.probe import L2_GRID, fit_linear_probe, fit_linear_probe_val


def _task(seed, n, h=40, noise=3.0):
    rng = np.random.default_rng(seed)
    w = np.zeros(h)
    w[:2] = 1.0
    x = rng.normal(size=(n, h)) * 0.05
    y = (x @ w + noise * 0.05 * rng.normal(size=n) > 0).astype(int)
    return x, y


def test_the_grid_is_a_documented_logspace_around_one():
    assert len(L2_GRID) == 17 and min(L2_GRID) == pytest.approx(1e-3) and max(L2_GRID) == pytest.approx(1e5)
    assert 1.0 in [round(v, 9) for v in L2_GRID]


def test_the_selected_l2_is_the_best_on_validation_and_ignores_test():
    xt, yt = _task(1, 24)
    xv, yv = _task(2, 200)
    w, b, l2 = fit_linear_probe_val(xt, yt, xv, yv, 2)
    assert l2 in L2_GRID
    accs = {}
    for g in L2_GRID:
        wg, bg = fit_linear_probe(xt, yt, 2, l2=g)
        accs[g] = float(((xv @ wg.T + bg).argmax(1) == yv).mean())
    assert accs[l2] == max(accs.values())
    np.testing.assert_allclose(w, fit_linear_probe(xt, yt, 2, l2=l2)[0])
    # a one-point grid is just the fixed-L2 probe
    assert fit_linear_probe_val(xt, yt, xv, yv, 2, grid=(1.0,))[2] == 1.0
    with pytest.raises(ValueError):
        fit_linear_probe_val(xt, yt, xv, yv, 2, grid=())
