"""The otf output bit order (``PerturbConfig.lfsr_bit_order``): validation, the spread permutation, the
array's lanes, the scale LUT, the family sampler, and the correlation it removes."""

import math

import numpy as np
import pytest

from pezo.golden.config import BIT_ORDERS, PerturbConfig
from pezo.golden.rng.lfsr import bit_order, lfsr_jump, permute_state, spread_order
from pezo.golden.rng.scale import direct_squared_norm, lane_states, msequence, scale_lut, squared_norms
from pezo.golden.rng.urng import URNGArray
from pezo.golden.zo.families import make_sampler


def shift_correlation(order, m):
    """rho_m of the module docstring: correlation of a value with its state shifted by m bits."""
    b = len(order)
    return sum(2.0 ** (order[j] + order[j - m]) for j in range(m, b)) / sum(4.0**a for a in order)


def test_default_is_spread_and_natural_is_the_identity():
    assert PerturbConfig().lfsr_bit_order == "spread" and BIT_ORDERS == ("natural", "spread")
    states = np.arange(1, 1 << 9, dtype=np.uint64)
    assert np.array_equal(permute_state(states, 9, "natural"), states)
    assert bit_order(9, "natural") == tuple(range(9))


@pytest.mark.parametrize("value", ["shift", "", None, 1, "Spread"])
def test_bad_bit_order_is_one_error_naming_the_field(value):
    with pytest.raises(ValueError, match=r"^lfsr_bit_order must be one of natural, spread, got "):
        PerturbConfig(lfsr_bit_order=value)


def test_family_option_error_names_the_option():
    with pytest.raises(ValueError, match=r"^bit_order must be one of natural, spread, got 'x'"):
        make_sampler("pezo-otf", 10, bit_order="x")


@pytest.mark.parametrize("bits", range(3, 33))
def test_spread_is_a_permutation_with_the_top_pair_at_the_largest_shift(bits):
    order = spread_order(bits)
    assert sorted(order) == list(range(bits))
    assert {order[0], order[-1]} == {bits - 1, bits - 2}  # 3/8 unavoidable: put at shift b - 1


def test_spread_orders_are_pinned():
    """The documented greedy's result (a change here changes every spread stream and its LUT)."""
    assert spread_order(8) == (7, 3, 0, 2, 4, 5, 1, 6)
    assert spread_order(14) == (13, 6, 8, 4, 0, 1, 5, 9, 2, 11, 7, 3, 10, 12)


@pytest.mark.parametrize("bits,small,upto", [(8, 0.12, 4), (14, 0.095, 7), (16, 0.095, 8)])
def test_spread_keeps_small_shifts_small(bits, small, upto):
    """Natural: rho_1 ~ 1/2, rho_2 ~ 1/4. Spread: shifts 1..``upto`` below ``small``, every shift < b - 1 below
    0.2 (the top-with-third pair, 3/16); shift b - 1 carries the unavoidable 3/8."""
    natural, spread = tuple(range(bits)), spread_order(bits)
    assert shift_correlation(natural, 1) > 0.49 and shift_correlation(natural, 2) > 0.24
    assert max(shift_correlation(spread, m) for m in range(1, upto + 1)) < small
    assert max(shift_correlation(spread, m) for m in range(1, bits - 1)) < 0.2
    assert shift_correlation(spread, bits - 1) == pytest.approx(0.375, abs=0.01)


@pytest.mark.parametrize("bits", [3, 8, 14, 32])
def test_permute_state_int_and_array_agree_and_are_a_bijection(bits):
    rng = np.random.default_rng(bits)
    states = rng.integers(1, 1 << bits, 500, dtype=np.uint64)
    got = permute_state(states, bits, "spread")
    assert got.tolist() == [permute_state(int(s), bits, "spread") for s in states]
    for s in states[:50]:  # bit j of the state is bit order[j] of the lane
        lane = permute_state(int(s), bits, "spread")
        assert all((lane >> sig & 1) == (int(s) >> j & 1) for j, sig in enumerate(spread_order(bits)))
    if bits <= 14:
        every = np.arange(1, 1 << bits, dtype=np.uint64)
        assert np.array_equal(np.sort(permute_state(every, bits, "spread")), every)


@pytest.mark.parametrize("leap", [1, 5])
def test_array_lanes_are_the_permuted_states(leap):
    cfg = PerturbConfig(n_rngs=7, rng_bits=10, lfsr_leap=leap, lfsr_bit_order="spread")
    natural = URNGArray(cfg.replace(lfsr_bit_order="natural"))
    spread = URNGArray(cfg)
    for _ in range(40):
        assert spread.snapshot() == natural.snapshot()  # the states and pointer do not change
        assert spread.raw_lanes().tolist() == [permute_state(int(s), 10, "spread") for s in natural.raw_lanes()]
        assert np.array_equal(spread.lanes(), spread.raw_lanes().astype(np.int64) - 512)
        natural.step()
        spread.step()
    lanes, _ = URNGArray(cfg).run(30, raw=True)
    ref, _ = URNGArray(cfg.replace(lfsr_bit_order="natural")).run(30, raw=True)
    assert np.array_equal(lanes, permute_state(ref, 10, "spread"))


@pytest.mark.parametrize("n,bits,d", [(5, 8, 37), (31, 10, 200), (32, 14, 1000)])
def test_scale_norms_and_lut_use_the_lane_values(n, bits, d):
    cfg = PerturbConfig(n_rngs=n, rng_bits=bits, perturb_dim=d, lfsr_bit_order="spread")
    norms = squared_norms(cfg)
    for e in (0, 1, 77):
        assert norms[e] == direct_squared_norm(cfg, e)
    assert not np.array_equal(norms, squared_norms(cfg.replace(lfsr_bit_order="natural")))
    lut = scale_lut(cfg)
    assert np.array_equal(lane_states(cfg), permute_state(msequence(cfg).astype(np.uint64), bits, "spread"))
    # entry addressed by what lane 0 shows at an aligned start = the rounded factor of that start
    from pezo.golden.rng.scale import exact_factors, round_log2

    shifts = round_log2(exact_factors(cfg))
    assert np.array_equal(lut[lane_states(cfg)], shifts)


def test_sampler_values_are_the_permuted_natural_values():
    d, n, b = 500, 31, 12
    natural = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, scaling="none", bit_order="natural")
    spread = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, scaling="none")  # the default
    assert natural.options()["bit_order"] == "natural" and "bit_order" not in spread.options()
    for t in (0, 4):
        nat = np.rint(natural.perturbation(t) * 2 ** (b - 1)).astype(np.int64) + 2 ** (b - 1)
        got = np.rint(spread.perturbation(t) * 2 ** (b - 1)).astype(np.int64) + 2 ** (b - 1)
        assert got.tolist() == [permute_state(int(v), b, "spread") for v in nat]


def lag_corr(sampler, lag, count=300):
    z = np.stack([sampler.perturbation(t) for t in range(count)]).astype(np.float64)
    z -= z.mean()
    return float((z[:, :-lag] * z[:, lag:]).mean() / (z * z).mean())


def test_spread_removes_the_lag_n_minus_1_correlation():
    n, b, d = 32, 14, 200
    natural = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, scaling="none", bit_order="natural")
    spread = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, scaling="none", bit_order="spread")
    assert lag_corr(natural, n - 1) > 0.4 and lag_corr(natural, 2 * (n - 1)) > 0.18
    assert abs(lag_corr(spread, n - 1)) < 0.09 and abs(lag_corr(spread, 2 * (n - 1))) < 0.06
    # predicted: rho_m * (n - m) / n at lag m(n - 1)
    for m in (1, 2):
        assert lag_corr(spread, m * (n - 1)) == pytest.approx(
            shift_correlation(spread_order(b), m) * (n - m) / n, abs=0.03
        )


def test_jump_consistency_of_permuted_lanes():
    """Lane 0 at aligned cycle t shows the permuted state of RNG (t mod n) stepped t times."""
    cfg = PerturbConfig(n_rngs=3, rng_bits=9, lfsr_bit_order="spread", seed=11)
    lanes, _ = URNGArray(cfg).run(12, raw=True)
    reset = URNGArray(cfg.replace(lfsr_bit_order="natural")).snapshot().states
    for t in range(12):
        assert int(lanes[t, 0]) == permute_state(lfsr_jump(reset[t % 3], 9, t), 9, "spread")
    assert math.gcd(3, 511) == 1


def test_spread_with_a_leap_dividing_b_minus_1_warns():
    """32 x 8, k = 7 = b - 1: one clock is the spread order's 3/8 shift (measured +0.351 at lag 31)."""
    from pezo.golden.zo.families import SpreadLeapWarning

    with pytest.warns(SpreadLeapWarning, match=r"leap=7 dividing rng_bits - 1 = 7: lanes 1\(n - 1\) apart"):
        make_sampler("pezo-otf", 100, n_rngs=31, rng_bits=8, leap=7, bit_order="spread")
    assert shift_correlation(spread_order(8), 7) == pytest.approx(0.375, abs=0.01)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", SpreadLeapWarning)
        make_sampler("pezo-otf", 100, n_rngs=31, rng_bits=14, leap=5, bit_order="spread")  # 5 does not divide 13
        make_sampler(
            "pezo-otf", 100, n_rngs=31, rng_bits=8, leap=7, bit_order="natural"
        )  # natural order: no peak at b - 1
