"""The leap-forward URNG array (``PerturbConfig.lfsr_leap`` = k LFSR steps per clock): validation, the
array's cycle semantics, rewind, the combination count, the scale LUT's offsets, and the decorrelation."""

import math

import numpy as np
import pytest

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.lfsr import lfsr_jump, lfsr_leap_array, lfsr_next_array
from pezo.golden.rng.scale import direct_squared_norm, element_offsets, squared_norms
from pezo.golden.rng.urng import URNGArray, count_distinct_combinations, distinct_combinations, initial_states


def test_default_is_one_step_per_clock():
    assert PerturbConfig().lfsr_leap == 1
    cfg = PerturbConfig(n_rngs=5, rng_bits=7)
    states = np.array(initial_states(cfg), dtype=np.uint64)
    assert np.array_equal(lfsr_leap_array(states, 7), lfsr_next_array(states, 7))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"lfsr_leap": 0}, r"lfsr_leap must be in 1\.\.14, got 0"),
        ({"lfsr_leap": 15}, r"lfsr_leap must be in 1\.\.14, got 15"),
        ({"lfsr_leap": 3}, r"lfsr_leap must be coprime to 2\^14 - 1 = 16383 .* got 3 \(common factor 3\)"),
        ({"rng_bits": 12, "lfsr_leap": 12}, r"lfsr_leap must be coprime .* 4095 .* got 12 \(common factor 3\)"),
        ({"rng_bits": 6, "lfsr_leap": 6}, r"lfsr_leap must be coprime .* 63 .* got 6 \(common factor 3\)"),
        ({"lfsr_leap": True}, r"lfsr_leap must be an integer"),
    ],
)
def test_bad_leap_is_one_error_naming_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PerturbConfig(**kwargs)


@pytest.mark.parametrize("bits", [4, 8, 10, 14, 16])
def test_leap_b_is_allowed_where_coprime(bits):
    assert PerturbConfig(rng_bits=bits, n_rngs=3, lfsr_leap=bits).lfsr_leap == bits


@pytest.mark.parametrize("bits,leap", [(14, 14), (14, 5), (8, 8), (32, 2)])
def test_leap_array_equals_jump(bits, leap):
    states = [1, 2, 3, (1 << bits) - 1, 0x1234 & ((1 << bits) - 1) or 1]
    got = lfsr_leap_array(np.array(states, dtype=np.uint64), bits, leap)
    assert got.tolist() == [lfsr_jump(s, bits, leap) for s in states]


@pytest.mark.parametrize("n,bits,leap", [(32, 14, 14), (5, 8, 8), (3, 5, 5)])
def test_rng_of_a_position_is_k_steps_further_each_clock(n, bits, leap):
    cfg = PerturbConfig(n_rngs=n, rng_bits=bits, lfsr_leap=leap, lfsr_bit_order="natural")  # raw states
    reset = initial_states(cfg)
    lanes, pointers = URNGArray(cfg).run(3 * n + 2, raw=True)
    for t in range(3 * n + 2):
        assert pointers[t] == t % n
        assert lanes[t].tolist() == [lfsr_jump(reset[(p + t) % n], bits, leap * t) for p in range(n)]


def test_k_equal_b_shares_no_bits_with_the_last_state():
    """k = b: a lane's next state (one position on) is b fresh m-sequence bits, not a one-bit shift."""
    bits = 14
    one = (
        URNGArray(PerturbConfig(n_rngs=32, rng_bits=bits, lfsr_bit_order="natural"))
        .run(200, raw=True)[0]
        .astype(np.int64)
    )
    leap = (
        URNGArray(PerturbConfig(n_rngs=32, rng_bits=bits, lfsr_leap=bits, lfsr_bit_order="natural"))
        .run(200, raw=True)[0]
        .astype(np.int64)
    )
    # position p at t+1 holds the RNG that was at position p+1 at t
    assert np.array_equal(one[1:, :-1] & ((1 << (bits - 1)) - 1), one[:-1, 1:] >> 1)
    shifted = np.mean((leap[1:, :-1] & ((1 << (bits - 1)) - 1)) == (leap[:-1, 1:] >> 1))
    assert shifted < 0.01


def test_save_restore_replays_with_leap():
    cfg = PerturbConfig(n_rngs=8, rng_bits=10, rewind=True, lfsr_leap=10)
    array = URNGArray(cfg)
    for _ in range(13):
        array.step()
    assert array.align() == 3 and array.pointer == 0
    start = array.snapshot()
    array.step(save=True)
    first = [array.lanes().tolist()]
    for _ in range(30):
        array.step()
        first.append(array.lanes().tolist())
    array.step(restore=True)
    assert array.snapshot() == start
    replay = []
    for _ in range(31):
        array.step()
        replay.append(array.lanes().tolist())
    assert replay == first


@pytest.mark.parametrize(
    "n,bits,leap,seed",
    [(2, 3, 3, 1), (4, 4, 4, 1), (7, 5, 5, 1), (5, 6, 5, 1), (3, 4, 2, 3), (3, 4, 4, 3), (5, 4, 4, 1), (6, 4, 2, 1)],
)
def test_combination_count_with_leap_equals_brute_force(n, bits, leap, seed):
    import warnings

    cfg = PerturbConfig(n_rngs=n, rng_bits=bits, seed=seed, lfsr_leap=leap)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # collapsing seeds warn
        assert count_distinct_combinations(cfg) == distinct_combinations(cfg)
    if math.gcd(n, cfg.lfsr_period) == 1:
        assert distinct_combinations(cfg) == n * cfg.lfsr_period


@pytest.mark.parametrize("n,bits,leap,d", [(32, 14, 14, 1000), (5, 8, 8, 3), (7, 8, 8, 2000), (31, 10, 10, 100)])
def test_scale_norms_follow_the_leap(n, bits, leap, d):
    cfg = PerturbConfig(n_rngs=n, rng_bits=bits, perturb_dim=d, lfsr_leap=leap)
    offsets = element_offsets(cfg)
    phases_only = element_offsets(cfg.replace(lfsr_leap=1))
    t = np.arange(d) // n
    assert np.array_equal(offsets, (phases_only + (leap - 1) * t) % cfg.lfsr_period)
    norms = squared_norms(cfg)
    for start in np.random.default_rng(0).integers(0, cfg.lfsr_period, 6):
        assert norms[start] == direct_squared_norm(cfg, int(start))


def test_lane_correlation_at_n_minus_1_vanishes_with_leap_b():
    """Lag n - 1 inside a perturbation (cycle-major lanes) is one LFSR's consecutive values."""

    def lag_corr(cfg, lag):
        lanes, _ = URNGArray(cfg).run(4000)
        x = lanes.reshape(-1).astype(np.float64)
        return np.corrcoef(x[:-lag], x[lag:])[0, 1]

    n, bits = 31, 14
    assert lag_corr(PerturbConfig(n_rngs=n, rng_bits=bits, lfsr_bit_order="natural"), n - 1) > 0.4
    assert abs(lag_corr(PerturbConfig(n_rngs=n, rng_bits=bits, lfsr_leap=bits, lfsr_bit_order="natural"), n - 1)) < 0.03


@pytest.mark.parametrize("bits,leap", [(14, 1), (14, 14), (8, 8), (32, 7), (5, 3)])
def test_leap_feedback_is_the_flat_k_step_map(bits, leap):
    """The hardware's flat XOR form (``leap_feedback``) equals k one-bit steps, and k = 1 is the shift."""
    from pezo.golden.rng.lfsr import feedback_bits, leap_feedback

    rows = leap_feedback(bits, leap)
    if leap == 1:
        assert rows == tuple((i + 1,) for i in range(bits - 1)) + (feedback_bits(bits),)
    for state in np.random.default_rng(bits).integers(1, 1 << bits, 50).tolist():
        flat = sum((sum(state >> j & 1 for j in row) & 1) << i for i, row in enumerate(rows))
        assert flat == lfsr_jump(state, bits, leap)


def test_report_budget_counts_the_leap_xors():
    """The otf budget: one LUT per LFSR at leap 1 (PeZO's physical limit), the flat XOR trees beyond."""
    from pezo.boards.flow.estimates import budget, lfsr_luts

    assert lfsr_luts(14, 1) == lfsr_luts(8, 1) == 1
    assert lfsr_luts(14, 5) == 5 and lfsr_luts(8, 8) == 8 and lfsr_luts(14, 14) == 22
    assert budget(PerturbConfig(n_rngs=32, rng_bits=14))["bare"] == {"LUT": 37, "FF": 455}
    assert budget(PerturbConfig(n_rngs=32, rng_bits=14, lfsr_leap=14))["bare"]["LUT"] == 32 * 22 + 5
