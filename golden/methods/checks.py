"""Monte Carlo checks of zeroth-order estimator geometry on a linear loss (reproducible from a seed).

``rge_norm_inflation``: the Poor Man's paper's Eq. 8 randomized gradient estimate (RGE) of
``f(x) = g . x``, with g a random unit vector. Its forward difference (f(x + mu xi) - f(x)) / mu =
xi . g is exact for every mu, so the estimate is

    ghat = (1/Q) sum_q (xi_q . g) xi_q .

For i.i.d. coordinates with E z^2 = s2 and E z^4 = m4,

    E ||ghat||^2 / ||g||^2 = (m4 + (d + Q - 2) s2^2) / Q ,

which for Rademacher (s2 = m4 = 1) is (Q + d - 1)/Q, the factor behind gradient-norm scaling (GNS,
Sec. 3.1.2), and for Gaussian (m4 = 3) is (Q + d + 1)/Q. The mean cosine between ghat and g is about
sqrt(Q / (Q + d - 1)). ``expected_inflation`` and ``expected_cosine`` are these unit-variance values;
``moment_prediction`` plugs the measured per-element moments into the formula, so a family that is not
unit variance (``uniform``: E z^2 = 1/3; the PeZO families are pre-scaled to a Gaussian's norm, not to
unit variance per element: pezo-otf's LUT scaling gives E z^2 = 4/3 at d = 1000) can be read against its
own prediction, and ``normalized_inflation`` = measured / s2^2 is the inflation relative to the squared
norm of the estimate's mean E ghat = s2 g, comparable with (Q + d - 1)/Q for any scale. The formula
assumes independent coordinates and independent perturbations; a family whose values are correlated
(within a perturbation or across perturbation indices) measures above it. The cosine does not depend
on the scale of xi.

``sign_spsa_expectation``: Stepping Forward's sign-SPSA direction. For z ~ N(0, I) and a linear loss,
E[sign(grad . z) z] = sqrt(2/pi) grad / ||grad|| (norm 0.7979). For other families the value is
not exact; for large d the central limit theorem gives about sqrt(2/pi * E z^2) (``clt_norm``), which is
reported next to the measured value.

Perturbations come from a ``pezo.golden.zo.families`` sampler (any of ``FAMILIES``, with its options) or from
``pezo.golden.methods.xorshift.XorShiftRademacherSampler`` (family ``"xorshift-rademacher"``, no options), keyed by
the same ``seed``; g is drawn from ``SeedSequence([seed, 0x20C4EC5])`` so it does not share a stream
with the perturbations.
"""

from __future__ import annotations

import math

import numpy as np

from pezo.golden.config import check_int
from pezo.golden.methods.xorshift import XorShiftRademacherSampler
from pezo.golden.zo.families import MAX_SEED, Sampler, make_sampler

MAX_DIM = 1 << 24
MAX_QUERIES = 1 << 16
MAX_TRIALS = 1 << 20
MAX_SAMPLES = 1 << 24
SIGN_BLOCK = 1024  # perturbations per matrix in sign_spsa_expectation
_TARGET_KEY = 0x20C4EC5
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def make_check_sampler(family: str, dim: int, seed: int, **family_options) -> Sampler:
    """``make_sampler`` plus the ``"xorshift-rademacher"`` family (which takes no options)."""
    if family == XorShiftRademacherSampler.family:
        for name in family_options:
            raise ValueError(f"{name} is not an option of family {family!r} ({family} takes no options)")
        return XorShiftRademacherSampler(dim, seed)
    return make_sampler(family, dim, seed=seed, **family_options)


def _unit_target(dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence([seed, _TARGET_KEY]))
    g = rng.standard_normal(dim)
    return g / np.linalg.norm(g)


def _matrix(sampler: Sampler, first: int, rows: int) -> np.ndarray:
    """float64 [rows, dim]: perturbations first .. first + rows - 1."""
    out = np.empty((rows, sampler.dim), dtype=np.float64)
    for r in range(rows):
        out[r] = sampler.perturbation(first + r)
    return out


def rge_norm_inflation(
    dim: int, queries: int, trials: int, seed: int, family: str = "rademacher", **family_options
) -> dict:
    """Mean ||ghat||^2 / ||g||^2 and mean cos(ghat, g) of Eq. 8's RGE on a linear loss, over ``trials``
    independent estimates of ``queries`` perturbations each (perturbation index trial * queries + q).

    Returns dim, queries, trials, family, options, measured_inflation, expected_inflation ((Q+d-1)/Q,
    unit variance), inflation_ratio (measured / expected), inflation_stderr, measured_cosine,
    expected_cosine (sqrt(Q/(Q+d-1))), cosine_stderr, second_moment and fourth_moment (mean z^2, z^4
    over all drawn elements), moment_prediction ((m4 + (d+Q-2) s2^2)/Q) and normalized_inflation
    (measured / s2^2).
    """
    dim = check_int("dim", dim, 1, MAX_DIM)
    queries = check_int("queries", queries, 1, MAX_QUERIES)
    trials = check_int("trials", trials, 1, MAX_TRIALS)
    seed = check_int("seed", seed, 0, MAX_SEED)
    sampler = make_check_sampler(family, dim, seed, **family_options)
    g = _unit_target(dim, seed)
    inflation = np.empty(trials)
    cosine = np.empty(trials)
    s2 = s4 = 0.0
    for t in range(trials):
        xi = _matrix(sampler, t * queries, queries)
        ghat = ((xi @ g) @ xi) / queries
        norm2 = float(ghat @ ghat)
        inflation[t] = norm2
        cosine[t] = float(ghat @ g) / math.sqrt(norm2) if norm2 > 0 else 0.0
        sq = xi * xi
        s2 += float(sq.sum())
        s4 += float((sq * sq).sum())
    n = trials * queries * dim
    s2, s4 = s2 / n, s4 / n
    expected = (queries + dim - 1) / queries
    measured = float(inflation.mean())

    def stderr(a) -> float:
        return float(a.std(ddof=1) / math.sqrt(trials)) if trials > 1 else float("nan")

    return {
        "dim": dim,
        "queries": queries,
        "trials": trials,
        "family": family,
        "options": dict(family_options),
        "measured_inflation": measured,
        "expected_inflation": expected,
        "inflation_ratio": measured / expected,
        "inflation_stderr": stderr(inflation),
        "measured_cosine": float(cosine.mean()),
        "expected_cosine": math.sqrt(queries / (queries + dim - 1)),
        "cosine_stderr": stderr(cosine),
        "second_moment": s2,
        "fourth_moment": s4,
        "moment_prediction": (s4 + (dim + queries - 2) * s2 * s2) / queries,
        "normalized_inflation": measured / (s2 * s2) if s2 > 0 else float("nan"),
    }


def sign_spsa_expectation(dim: int, samples: int, seed: int, family: str = "gaussian", **family_options) -> dict:
    """Monte Carlo mean of sign(grad . z) z over ``samples`` perturbations (indices 0 .. samples-1) for a
    linear loss with a random unit ``grad``; sign(0) = 0 contributes nothing.

    Returns dim, samples, family, options, measured_norm (||mean||), expected_norm (sqrt(2/pi) for
    ``gaussian``, else None: no exact closed form), clt_norm (sqrt(2/pi * E z^2), the large-d value for
    any i.i.d. family), cosine (cos(mean, grad)), second_moment (mean z^2).
    """
    dim = check_int("dim", dim, 1, MAX_DIM)
    samples = check_int("samples", samples, 1, MAX_SAMPLES)
    seed = check_int("seed", seed, 0, MAX_SEED)
    sampler = make_check_sampler(family, dim, seed, **family_options)
    grad = _unit_target(dim, seed)
    total = np.zeros(dim)
    s2 = 0.0
    for first in range(0, samples, SIGN_BLOCK):
        z = _matrix(sampler, first, min(SIGN_BLOCK, samples - first))
        total += np.sign(z @ grad) @ z
        s2 += float((z * z).sum())
    mean = total / samples
    s2 /= samples * dim
    norm = float(np.linalg.norm(mean))
    return {
        "dim": dim,
        "samples": samples,
        "family": family,
        "options": dict(family_options),
        "measured_norm": norm,
        "expected_norm": SQRT_2_OVER_PI if family == "gaussian" else None,
        "clt_norm": math.sqrt(2.0 / math.pi * s2),
        "cosine": float(mean @ grad) / norm if norm > 0 else 0.0,
        "second_moment": s2,
    }


QUALITY_N = 31
"""The on-the-fly array's default RNG count (``OtfSampler``): lags 1 .. 2n are where its rotation hands one
LFSR's shifted copy to the next lane, so every family is measured over the same lags."""
MAX_LAG = 4096
LAG_ELEMENTS = 1 << 22
"""At most this many elements (32 MiB of float64) enter the lag correlations."""


def lag_correlations(sampler: Sampler, perturbations: int, max_lag: int) -> np.ndarray:
    """Pearson correlation between elements L apart inside one perturbation, for L = 1 .. ``max_lag``,
    pooled over perturbations 0 .. ``perturbations`` - 1 (centred by the pooled mean). For independent
    elements each value is 0 within about 1/sqrt(perturbations * (d - L))."""
    z = _matrix(sampler, 0, perturbations)
    z -= z.mean()
    var = float((z * z).mean())
    if var == 0.0:
        return np.zeros(max_lag)
    return np.array([float((z[:, :-lag] * z[:, lag:]).mean()) / var for lag in range(1, max_lag + 1)])


def perturbation_quality(
    family: str,
    dim: int = 100,
    queries: int = 100,
    trials: int = 200,
    seed: int = 1,
    max_lag: int | None = None,
    **family_options,
) -> dict:
    """How independent one family's perturbation values are, and what that does to the estimator.

    * ``lag_correlations`` (L = 1 .. ``max_lag``, default 2n with n the family's ``n_rngs`` or
      ``QUALITY_N``, at most d - 1) over ``lag_perturbations`` = min(T·Q, 2^22 / d) perturbations;
      ``max_lag_correlation`` is the largest |value|, at ``max_lag_correlation_lag``; ``lag_noise`` =
      3 / sqrt(lag_perturbations·(d - max_lag)) is what independent values reach by chance (3 sigma).
    * ``cosine``: mean cos(ghat, g) of ``rge_norm_inflation`` (``queries`` perturbations an estimate,
      ``trials`` estimates); ``cosine_theory`` = sqrt(Q / (Q + d - 1)), independent values.
    * ``inflation``: mean ||ghat||^2 / ||g||^2; ``inflation_theory``: the same for independent values
      with the family's own measured moments ((m4 + (d + Q - 2) s2^2) / Q); ``inflation_excess`` =
      inflation / inflation_theory - 1.
    * ``near_repeat`` (pezo-otf only): ``pezo.golden.rng.urng.near_repeat`` of the family's config; a period
      below the T·Q perturbations drawn warns (``NearRepeatWarning``).
    """
    dim = check_int("dim", dim, 2, MAX_DIM)
    queries = check_int("queries", queries, 1, MAX_QUERIES)
    trials = check_int("trials", trials, 1, MAX_TRIALS)
    sampler = make_check_sampler(family, dim, seed, **family_options)  # checks the family's options first
    if max_lag is None:
        max_lag = min(2 * family_options.get("n_rngs", QUALITY_N), dim - 1, MAX_LAG)
    max_lag = check_int("max_lag", max_lag, 1, min(dim - 1, MAX_LAG))
    rge = rge_norm_inflation(dim, queries, trials, seed, family, **family_options)
    count = max(1, min(trials * queries, LAG_ELEMENTS // dim))
    repeat = sampler.check_near_repeat(max(trials * queries, count))  # warns if the draws hold shifted copies
    lags = lag_correlations(sampler, count, max_lag)
    worst = int(np.argmax(np.abs(lags)))
    extra = {"near_repeat": repeat} if repeat is not None else {}
    return {
        "family": family,
        "d": dim,
        "queries": queries,
        "trials": trials,
        "seed": seed,
        "options": dict(family_options),
        "max_lag": max_lag,
        "lag_correlations": [round(float(v), 5) for v in lags],
        "max_lag_correlation": float(abs(lags[worst])),
        "max_lag_correlation_lag": worst + 1,
        "max_lag_correlation_signed": float(lags[worst]),
        "lag_perturbations": count,
        "lag_noise": 3.0 / math.sqrt(count * (dim - max_lag)),
        "cosine": rge["measured_cosine"],
        "cosine_theory": rge["expected_cosine"],
        "cosine_stderr": rge["cosine_stderr"],
        "inflation": rge["measured_inflation"],
        "inflation_theory": rge["moment_prediction"],
        "inflation_excess": rge["measured_inflation"] / rge["moment_prediction"] - 1.0,
        "inflation_stderr": rge["inflation_stderr"],
        "second_moment": rge["second_moment"],
        "fourth_moment": rge["fourth_moment"],
        **extra,
    }
