"""Monte Carlo checks of ZO estimator geometry (``golden.methods.checks``) against the digests' numbers:
Poor Man's Eq. 8 norm inflation (Q + d - 1)/Q and cosine sqrt(Q/(Q + d - 1)) (digest-poormans.md
sections 6.1 and 17.2), and Stepping Forward's sign-SPSA expectation sqrt(2/pi) (digest-steppingforward.md
sections 1.3 and 4.2). Seeds are fixed, so every test is deterministic; the tolerances are several
Monte Carlo standard errors wide (the functions report the standard errors)."""

import math

import numpy as np
import pytest

from pezo.golden.methods.checks import make_check_sampler, rge_norm_inflation, sign_spsa_expectation
from pezo.golden.zo.families import make_sampler


def check_inflation(r, rel_tol, cos_tol=0.02):
    assert r["expected_inflation"] == pytest.approx((r["queries"] + r["dim"] - 1) / r["queries"])
    assert r["expected_cosine"] == pytest.approx(math.sqrt(r["queries"] / (r["queries"] + r["dim"] - 1)))
    assert abs(r["inflation_ratio"] - 1) < rel_tol, r
    assert abs(r["measured_cosine"] - r["expected_cosine"]) < cos_tol, r


# -- digest numbers (Rademacher) -----------------------------------------------------------------------
def test_inflation_d1000_q100():
    r = rge_norm_inflation(1000, 100, 200, seed=1)
    assert r["expected_inflation"] == pytest.approx(10.99) and r["expected_cosine"] == pytest.approx(0.302, abs=5e-4)
    check_inflation(r, 0.03)
    assert r["inflation_stderr"] < 0.015 * r["expected_inflation"]  # the 3 % band is > 2 standard errors
    assert r["second_moment"] == 1.0 and r["fourth_moment"] == 1.0
    assert r["moment_prediction"] == pytest.approx(r["expected_inflation"])


def test_inflation_d100_q100():
    r = rge_norm_inflation(100, 100, 300, seed=2)
    assert r["expected_inflation"] == pytest.approx(1.99) and r["expected_cosine"] == pytest.approx(0.709, abs=5e-4)
    check_inflation(r, 0.03)


def test_inflation_d4096_q50():
    r = rge_norm_inflation(4096, 50, 100, seed=3)
    assert r["expected_inflation"] == pytest.approx(82.9) and r["expected_cosine"] == pytest.approx(0.110, abs=5e-4)
    check_inflation(r, 0.05, cos_tol=0.005)  # 100 trials: standard error ~2 %


def test_xorshift_rademacher_family():
    r = rge_norm_inflation(500, 50, 100, seed=4, family="xorshift-rademacher")
    assert r["family"] == "xorshift-rademacher" and r["second_moment"] == 1.0
    assert abs(r["measured_inflation"] - r["expected_inflation"]) < 4 * r["inflation_stderr"], r
    check_inflation(r, 0.06)


# -- other families --------------------------------------------------------------------------------------
def test_pezo_pregen_inflation():
    r = rge_norm_inflation(1000, 100, 200, seed=4, family="pezo-pregen", pool_size=4095)
    assert r["options"] == {"pool_size": 4095}
    check_inflation(r, 0.10)
    assert r["second_moment"] == pytest.approx(1.0, abs=0.01)  # pool pre-scaled to a Gaussian's norm


def test_pezo_otf_inflation_measured():
    """pezo-otf does NOT meet (Q + d - 1)/Q within 10 % in raw units, and we record why rather than loosen:
    its LUT scaling multiplies the m-sequence values (E v^2 = 1/3) by 2 at d = 1000, so E z^2 = 4/3 and
    the raw inflation is ~(4/3)^2 = 1.78 times larger (measured 20.41, ratio 1.86, seed 5). Normalised
    by (E z^2)^2 it is 11.48 (+4.5 %); over seeds 1, 2, 3, 5, 7, 100, 1000 (400 trials) it ranges 11.14 ..
    12.41 (+1 .. +13 %), above the independent-vector value because nearby otf perturbations are
    correlated (rms correlation 0.039 between perturbation vectors vs 0.032 for independent ones)."""
    r = rge_norm_inflation(1000, 100, 200, seed=5, family="pezo-otf")
    assert r["second_moment"] == pytest.approx(4 / 3, rel=0.002)
    assert 1.75 < r["inflation_ratio"] < 2.0, r
    assert 1.0 < r["normalized_inflation"] / r["expected_inflation"] < 1.10, r
    assert abs(r["measured_cosine"] - r["expected_cosine"]) < 0.02, r  # the cosine is scale-free


def test_uniform_second_moment_explains_inflation():
    r = rge_norm_inflation(1000, 100, 100, seed=6, family="uniform")
    assert r["second_moment"] == pytest.approx(1 / 3, rel=0.01)
    assert r["fourth_moment"] == pytest.approx(1 / 5, rel=0.01)
    assert r["inflation_ratio"] == pytest.approx(1 / 9, rel=0.06)  # raw: (E z^2)^2 = 1/9 of unit variance
    assert r["measured_inflation"] == pytest.approx(r["moment_prediction"], rel=0.05)
    assert r["normalized_inflation"] == pytest.approx(r["expected_inflation"], rel=0.05)
    assert abs(r["measured_cosine"] - r["expected_cosine"]) < 0.02


def test_perturbation_indexing_and_reproducibility():
    dim, q, trials, seed = 64, 5, 3, 11
    r = rge_norm_inflation(dim, q, trials, seed, family="gaussian")
    assert r == rge_norm_inflation(dim, q, trials, seed, family="gaussian")
    other = rge_norm_inflation(dim, q, trials, seed + 1, family="gaussian")
    assert r["measured_inflation"] != other["measured_inflation"]
    # recompute by hand: trial t uses perturbations t*q .. t*q + q - 1
    sampler = make_sampler("gaussian", dim, seed=seed)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x20C4EC5]))
    g = rng.standard_normal(dim)
    g /= np.linalg.norm(g)
    infl, cos = [], []
    for t in range(trials):
        xi = np.stack([sampler.perturbation(t * q + k) for k in range(q)]).astype(np.float64)
        ghat = (xi @ g) @ xi / q
        infl.append(ghat @ ghat)
        cos.append(ghat @ g / np.linalg.norm(ghat))
    assert r["measured_inflation"] == pytest.approx(np.mean(infl), rel=1e-12)
    assert r["measured_cosine"] == pytest.approx(np.mean(cos), rel=1e-12)


# -- sign-SPSA ------------------------------------------------------------------------------------------
def test_sign_spsa_gaussian():
    r = sign_spsa_expectation(50, 40_000, seed=1)
    assert r["expected_norm"] == pytest.approx(math.sqrt(2 / math.pi)) == pytest.approx(0.7979, abs=1e-4)
    assert abs(r["measured_norm"] - 0.798) < 0.01, r
    assert r["cosine"] > 0.99, r


@pytest.mark.parametrize(
    "family, clt", [("rademacher", 0.7979), ("xorshift-rademacher", 0.7979), ("uniform", 0.7979 / math.sqrt(3))]
)
def test_sign_spsa_other_families(family, clt):
    r = sign_spsa_expectation(50, 10_000, seed=2, family=family)
    assert r["expected_norm"] is None and r["family"] == family
    assert r["clt_norm"] == pytest.approx(clt, rel=0.01)
    assert abs(r["measured_norm"] - r["clt_norm"]) < 0.03, r
    assert r["cosine"] > 0.98, r


# -- parameter policy -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"dim": 0}, "dim"),
        ({"queries": 0}, "queries"),
        ({"trials": 0}, "trials"),
        ({"dim": 2.5}, "dim"),
        ({"seed": -1}, "seed"),
    ],
)
def test_inflation_bad_input(kwargs, name):
    args = {"dim": 10, "queries": 2, "trials": 2, "seed": 1} | kwargs
    with pytest.raises(ValueError, match=rf"^{name} must be (an integer )?in \d+\.\.\d+"):
        rge_norm_inflation(**args)


@pytest.mark.parametrize("kwargs, name", [({"dim": 0}, "dim"), ({"samples": 0}, "samples"), ({"seed": -1}, "seed")])
def test_sign_bad_input(kwargs, name):
    args = {"dim": 10, "samples": 2, "seed": 1} | kwargs
    with pytest.raises(ValueError, match=rf"^{name} must be in \d+\.\.\d+"):
        sign_spsa_expectation(**args)


def test_family_errors():
    with pytest.raises(ValueError, match="family must be one of"):
        rge_norm_inflation(10, 2, 2, 1, family="sobol")
    with pytest.raises(ValueError, match="not an option of family 'xorshift-rademacher'"):
        make_check_sampler("xorshift-rademacher", 10, 1, pool_size=7)
    with pytest.raises(ValueError, match="seed must be in 1..2"):
        rge_norm_inflation(10, 2, 2, 0, family="xorshift-rademacher")
