"""Near repeats of the otf perturbation sequence (``golden.rng.urng.near_repeat``): perturbation t + D a
copy of perturbation t shifted by a few LFSR steps, and the warnings of the sampler, quality and train."""

import math
import warnings

import pytest

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.lfsr import lfsr_jump, permute_state, shift_correlation
from pezo.golden.rng.urng import NEAR_REPEAT_MIN_PERIOD, NearRepeatWarning, near_repeat, perturbation_advance
from pezo.golden.zo.families import PowerOfTwoWarning, make_sampler


@pytest.mark.parametrize(
    "kwargs,period,shift,advance",
    [
        ({"n_rngs": 32, "lfsr_leap": 8, "perturb_dim": 100}, 64, 1, 256),  # 2^8 * 2^6 = 2^14 = 1 (mod 2^14 - 1)
        ({"n_rngs": 32, "perturb_dim": 100}, 512, 1, 32),  # 2^5 * 2^9 = 2^14
        ({"n_rngs": 32, "perturb_dim": 1000}, 512, 1, 32),  # d <= n^2: the same advance
        ({"n_rngs": 31, "perturb_dim": 100}, 1057, 1, 31),
        ({"n_rngs": 32, "rng_bits": 8, "perturb_dim": 100}, 8, 1, 32),  # 2^5 * 2^3 = 2^8
        ({"n_rngs": 3, "rng_bits": 4, "perturb_dim": 5}, 5, 0, 3),  # exact period (2^4 - 1) / 3
    ],
)
def test_known_near_repeats(kwargs, period, shift, advance):
    info = near_repeat(PerturbConfig(lfsr_bit_order="natural", **kwargs))
    assert (info["period"], info["shift"], info["advance"]) == (period, shift, advance)
    assert info["correlation"] == pytest.approx(1.0 if shift == 0 else 0.5, abs=1e-4)


def test_leap_b_and_spread_lengthen_the_period_at_32x14():
    assert (
        near_repeat(PerturbConfig(n_rngs=32, perturb_dim=100, lfsr_leap=14, lfsr_bit_order="natural"))["period"] == 2377
    )
    spread = near_repeat(PerturbConfig(n_rngs=32, perturb_dim=100, lfsr_bit_order="spread"))
    assert spread["period"] > 512 and spread["correlation"] >= 0.1
    assert spread["correlation"] == shift_correlation(14, "spread", spread["shift"])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_rngs": 32, "lfsr_leap": 8, "perturb_dim": 100},
        {"n_rngs": 7, "rng_bits": 8, "perturb_dim": 60},
        {"n_rngs": 5, "rng_bits": 10, "perturb_dim": 77, "lfsr_leap": 7},
        {"n_rngs": 31, "rng_bits": 12, "perturb_dim": 500, "lfsr_bit_order": "spread"},
    ],
)
def test_the_period_is_the_first_shifted_copy_by_brute_force(kwargs):
    """Scan D = 1, 2, ...: the first D whose start is a shift with correlation >= 0.1 is the period, and the
    values of perturbation t + D are those of t, ``shift`` LFSR steps on."""
    cfg = PerturbConfig(**kwargs)
    info = near_repeat(cfg)
    period, bits = cfg.lfsr_period, cfg.rng_bits
    for D in range(1, info["period"] + 1):
        delta = D * info["advance"] % period
        delta = delta if delta <= period // 2 else delta - period
        if shift_correlation(bits, cfg.lfsr_bit_order, delta) >= 0.1:
            break
    assert (D, delta) == (info["period"], info["shift"])
    options = {"leap": cfg.lfsr_leap, "bit_order": cfg.lfsr_bit_order}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sampler = make_sampler("pezo-otf", cfg.perturb_dim, n_rngs=cfg.n_rngs, rng_bits=bits, scaling="none", **options)
    half = 1 << (bits - 1)
    for t in (0, 3):
        states = [int(round(v * half)) + half for v in sampler.perturbation(t)]
        later = [int(round(v * half)) + half for v in sampler.perturbation(t + D)]
        unpermute = {permute_state(s, bits, cfg.lfsr_bit_order): s for s in range(1, period + 1)}
        raw = [unpermute[s] for s in states]
        if delta >= 0:
            expect = [permute_state(lfsr_jump(s, bits, delta), bits, cfg.lfsr_bit_order) for s in raw]
            assert later == expect
        else:
            expect = [
                permute_state(lfsr_jump(s, bits, -delta), bits, cfg.lfsr_bit_order)
                for s in (unpermute[x] for x in later)
            ]
            assert states == expect


def test_advance_is_the_sampler_start_step():
    for n, d, k in [(32, 100, 1), (31, 5000, 5), (7, 1000, 1)]:
        cfg = PerturbConfig(n_rngs=n, perturb_dim=d, lfsr_leap=k)
        assert perturbation_advance(cfg) == k * n * math.ceil(d / n**2) % cfg.lfsr_period


def test_sampler_warns_below_the_threshold_naming_period_and_options():
    with pytest.warns(
        NearRepeatWarning,
        match=r"near-repeat period 64: with n_rngs=32, rng_bits=14, leap=8, "
        r"bit_order=natural, dim=100 perturbation t \+ 64",
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PowerOfTwoWarning)
            make_sampler("pezo-otf", 100, n_rngs=32, leap=8, bit_order="natural")
    assert NEAR_REPEAT_MIN_PERIOD == 100
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 31 x 14, d = 100: period 1057, no warning on construction
        sampler = make_sampler("pezo-otf", 100, n_rngs=31, bit_order="natural")
    assert sampler.describe()["near_repeat"]["period"] == 1057


def test_check_near_repeat_warns_for_a_run_longer_than_the_period():
    sampler = make_sampler("pezo-otf", 100, n_rngs=31, bit_order="natural")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sampler.check_near_repeat(1057)["period"] == 1057  # draws 0..1056: no copy yet
    with pytest.warns(NearRepeatWarning, match=r"period 1057.*below the 1058 perturbations this run draws"):
        sampler.check_near_repeat(1058)
    assert make_sampler("gaussian", 100).check_near_repeat(10**6) is None


def test_quality_reports_and_warns():
    from pezo.golden.methods.checks import perturbation_quality

    with pytest.warns(NearRepeatWarning, match="period 512.*below the 600 perturbations"):
        r = perturbation_quality("pezo-otf", dim=100, queries=20, trials=30, n_rngs=32, bit_order="natural")
    assert r["near_repeat"]["period"] == 512 and r["near_repeat"]["shift"] == 1
    assert "near_repeat" not in perturbation_quality("gaussian", dim=100, queries=5, trials=5)
