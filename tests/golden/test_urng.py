"""The golden URNG array: phases, rotation, save/restore, uniformity, and PeZO's combination claim."""

import math

import numpy as np
import pytest
from scipy import stats

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.lfsr import lfsr_jump, lfsr_next, offset_to_signed
from pezo.golden.rng.urng import (
    URNGArray,
    count_distinct_combinations,
    distinct_combinations,
    initial_states,
    rng_phases,
)


def test_phases_are_distinct_evenly_spaced_and_shuffled():
    cfg = PerturbConfig(n_rngs=32, rng_bits=14, seed=77)
    phases = rng_phases(cfg)
    spacing = cfg.lfsr_period // 32
    assert phases[0] == 0
    grid = sorted(phases)
    assert grid[0] == 0 and all(j * spacing <= g <= j * spacing + spacing // 2 for j, g in enumerate(grid))
    assert min(b - a for a, b in zip(grid, grid[1:])) >= spacing // 2  # RNGs stay apart
    assert list(phases) != grid  # dealt by the seeded shuffle, not in order
    assert rng_phases(cfg) == phases  # reproducible
    assert rng_phases(cfg.replace(seed=78)) != phases
    states = initial_states(cfg)
    assert len(set(states)) == 32 and states[0] == 77
    for s, phase in zip(states, phases):
        assert s == lfsr_jump(77, 14, phase)


def test_lanes_do_not_repeat_themselves_structurally():
    """Regression: with grid phases in index order, lane p of a 32 x 14 array equalled itself 511 cycles
    later in 31 of 32 cycles. Now a lane repeats itself only where one RNG pair's phase difference happens
    to match the lag: at most a few pairs, so at most ~k/n of the cycles at any lag, never most of them."""
    cfg = PerturbConfig(n_rngs=32, rng_bits=14)
    lanes, _ = URNGArray(cfg).run(4000, raw=True)
    worst = max((lanes[lag:] == lanes[:-lag]).mean() for lag in range(1, 2000))
    assert worst <= 2 / 32, worst


def test_rotation_property():
    """Position p at cycle t holds RNG (p + t) mod n, and that RNG has stepped t times."""
    cfg = PerturbConfig(n_rngs=7, rng_bits=9, seed=3, lfsr_bit_order="natural")  # raw states
    reset = initial_states(cfg)
    lanes, pointers = URNGArray(cfg).run(40, raw=True)
    for t in range(40):
        assert pointers[t] == t % 7
        for p in range(7):
            assert lanes[t, p] == lfsr_jump(reset[(p + t) % 7], 9, t)
        # the RNG in position 0 moves to the end after each cycle
        if t:
            assert lanes[t, 6] == lfsr_next(int(lanes[t - 1, 0]), 9)
            assert lanes[t, :6].tolist() == [lfsr_next(int(s), 9) for s in lanes[t - 1, 1:]]


def test_without_rotation_each_position_keeps_its_rng():
    cfg = PerturbConfig(n_rngs=4, rng_bits=6, lfsr_bit_order="natural")
    lanes, pointers = URNGArray(cfg, rotate=False).run(10, raw=True)
    assert not pointers.any()
    for t in range(1, 10):
        assert lanes[t].tolist() == [lfsr_next(int(s), 6) for s in lanes[t - 1]]


def test_signed_lanes_are_state_minus_half():
    cfg = PerturbConfig(n_rngs=3, rng_bits=8)
    array = URNGArray(cfg)
    assert array.lanes().tolist() == [s - 128 for s in array.raw_lanes().tolist()]
    signed, _ = URNGArray(cfg).run(300)
    assert signed.min() >= -127 and signed.max() <= 127


def test_enable_low_holds_state():
    cfg = PerturbConfig(n_rngs=5, rng_bits=7)
    array = URNGArray(cfg)
    before = array.snapshot()
    array.step(en=False)
    assert array.snapshot() == before
    array.step(en=True)
    assert array.snapshot() != before and array.pointer == 1


def test_save_restore_replays_the_stream():
    """The seed trick: save at a perturbation's start, stream, restore, stream again: identical."""
    cfg = PerturbConfig(n_rngs=8, rng_bits=10, rewind=True)
    array = URNGArray(cfg)
    for _ in range(13):
        array.step()
    assert array.align() == 3 and array.pointer == 0
    start = array.snapshot()
    array.step(save=True)  # save the visible state, advance as usual
    first = [array.lanes().tolist()]
    for _ in range(50):
        array.step()
        first.append(array.lanes().tolist())
    array.step(restore=True)
    assert array.snapshot() == start
    replay = []
    for _ in range(51):
        array.step()
        replay.append(array.lanes().tolist())
    assert replay == first


def test_save_is_ignored_unless_pointer_is_zero():
    cfg = PerturbConfig(n_rngs=4, rng_bits=6, rewind=True)
    array = URNGArray(cfg)
    array.step()
    array.step(save=True)  # pointer 1: ignored
    array.step(restore=True)
    assert array.snapshot() == array.reset_snapshot


def test_save_and_restore_in_one_cycle_swap():
    cfg = PerturbConfig(n_rngs=3, rng_bits=5, rewind=True)
    array = URNGArray(cfg)
    reset = array.snapshot()
    for _ in range(3):
        array.step()
    current = array.snapshot()
    assert current.pointer == 0
    array.step(save=True, restore=True)  # array <- old shadow (the reset state), shadow <- current
    assert array.snapshot() == reset
    array.step(restore=True)
    assert array.snapshot() == current


def test_restore_without_save_returns_to_reset():
    cfg = PerturbConfig(n_rngs=3, rng_bits=5, rewind=True)
    array = URNGArray(cfg)
    for _ in range(9):
        array.step()
    array.step(restore=True, en=True)  # restore wins over en
    assert array.snapshot() == array.reset_snapshot


def test_save_needs_rewind():
    with pytest.raises(ValueError, match="rewind"):
        URNGArray(PerturbConfig(n_rngs=2, rng_bits=4)).step(save=True)


def test_snapshot_load_round_trip():
    cfg = PerturbConfig(n_rngs=6, rng_bits=12)
    a = URNGArray(cfg)
    a.run(100)
    snap = a.snapshot()
    tail_a, _ = a.run(30)
    b = URNGArray(cfg)
    b.load(snap)
    tail_b, _ = b.run(30)
    assert np.array_equal(tail_a, tail_b)


@pytest.mark.parametrize("n,bits", [(32, 14), (32, 8), (31, 8)])
@pytest.mark.parametrize("seed", [1, 100])
def test_chi_square_uniformity_per_lane(n, bits, seed):
    """Every lane over 3 000 cycles is uniform over 16 bins (the top 4 state bits; bin 0 lacks state 0).

    Threshold: family-wise alpha = 0.01 over the n lanes (Bonferroni), so p > 0.01 / n per lane.
    """
    cfg = PerturbConfig(n_rngs=n, rng_bits=bits, seed=seed)
    lanes, _ = URNGArray(cfg).run(3000, raw=True)
    per_bin = np.full(16, 1 << (bits - 4))
    per_bin[0] -= 1
    p_values = []
    for p in range(n):
        counts = np.bincount((lanes[:, p] >> np.uint64(bits - 4)).astype(np.int64), minlength=16)
        p_values.append(stats.chisquare(counts, per_bin * len(lanes) / per_bin.sum()).pvalue)
    assert min(p_values) > 0.01 / n, min(p_values)
    assert abs(offset_to_signed(lanes, bits).mean()) < 0.05 * (1 << (bits - 1))


@pytest.mark.parametrize("n,bits", [(2, 3), (3, 5), (4, 4), (4, 6), (5, 6), (6, 4), (7, 5), (31, 8)])
def test_rotation_reaches_n_times_period_combinations(n, bits):
    """PeZO's claim: with gcd(n, 2^b-1) = 1 the rotating array gives n(2^b-1) distinct tuples, vs 2^b-1."""
    cfg = PerturbConfig(n_rngs=n, rng_bits=bits)
    period = (1 << bits) - 1
    without = count_distinct_combinations(cfg, rotate=False)
    with_rotation = count_distinct_combinations(cfg, rotate=True)
    assert without == period
    if math.gcd(n, period) == 1:
        assert with_rotation == n * period
    assert with_rotation == distinct_combinations(cfg)


@pytest.mark.parametrize("n,bits", [(3, 4), (5, 4), (7, 3), (3, 6), (31, 5), (9, 6), (15, 4)])
def test_when_n_divides_the_period_rotation_gains_nothing(n, bits):
    """When n | 2^b-1, lcm(n, 2^b-1) = 2^b-1: rotation cannot add combinations, and for tiny n (3 or 5
    RNGs with b = 4) the phase shuffle is forced to be arithmetic and the count even collapses."""
    cfg = PerturbConfig(n_rngs=n, rng_bits=bits)
    period = (1 << bits) - 1
    assert period % n == 0
    with_rotation = count_distinct_combinations(cfg, rotate=True)
    assert with_rotation == distinct_combinations(cfg) <= period


def test_a_seed_whose_phases_collapse_the_combination_count_warns():
    import math
    import warnings

    import pytest

    from pezo.golden.rng.urng import URNGArray, count_distinct_combinations, distinct_combinations

    cfg = PerturbConfig(n_rngs=3, rng_bits=4, seed=3)
    with pytest.warns(RuntimeWarning, match="collapse"):
        assert distinct_combinations(cfg) == count_distinct_combinations(cfg) == 5 < math.lcm(3, 15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        URNGArray(PerturbConfig(n_rngs=32, rng_bits=14))
        URNGArray(cfg, rotate=False)
