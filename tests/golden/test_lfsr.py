"""The LFSR table and step function: primitive polynomials, full periods, the signed map, jumps."""

import numpy as np
import pytest

from pezo.golden.rng.lfsr import (
    LFSR_TAPS,
    feedback_bits,
    lfsr_jump,
    lfsr_next,
    lfsr_next_array,
    lfsr_period,
    offset_to_signed,
)


def _prime_factors(m):
    out, d = set(), 2
    while d * d <= m:
        while m % d == 0:
            out.add(d)
            m //= d
        d += 1
    return out | ({m} if m > 1 else set())


def test_table_covers_3_to_32_with_at_most_four_feedback_inputs():
    assert sorted(LFSR_TAPS) == list(range(3, 33))
    for bits, taps in LFSR_TAPS.items():
        assert len(feedback_bits(bits)) in (2, 4), bits  # one LUT even with a restore mux folded in
        assert all(0 < k < bits for k in taps)


@pytest.mark.parametrize("bits", range(3, 33))
def test_every_polynomial_is_primitive(bits, gf2_x_power_mod):
    poly = (1 << bits) | 1
    for k in LFSR_TAPS[bits]:
        poly |= 1 << k
    order = (1 << bits) - 1
    assert gf2_x_power_mod(order, poly, bits) == 1
    for q in _prime_factors(order):
        assert gf2_x_power_mod(order // q, poly, bits) != 1


@pytest.mark.parametrize("bits", range(3, 21))
def test_full_period_by_stepping(bits):
    assert lfsr_period(bits, seed=1) == (1 << bits) - 1


@pytest.mark.parametrize("bits", [3, 5, 8, 11])
def test_visits_every_nonzero_state_once(bits):
    state, seen = 1, []
    for _ in range((1 << bits) - 1):
        seen.append(state)
        state = lfsr_next(state, bits)
    assert sorted(seen) == list(range(1, 1 << bits))
    values = sorted(offset_to_signed(s, bits) for s in seen)
    half = 1 << (bits - 1)
    assert values == list(range(-(half - 1), half)) and 0 in values
    assert sum(values) == 0  # symmetric: zero mean over a period


def test_step_form_is_a_right_shift_with_feedback_at_msb():
    # 8 bits, feedback = s0 ^ s1 ^ s2 ^ s7
    s = 0b1000_0111
    fb = 1 ^ 1 ^ 1 ^ 1
    assert lfsr_next(s, 8) == (s >> 1) | (fb << 7)
    assert lfsr_next(0b0000_0001, 8) == 0b1000_0000


def test_array_step_matches_scalar():
    rng = np.random.default_rng(0)
    for bits in (3, 14, 32):
        states = rng.integers(1, 1 << bits, size=64, dtype=np.uint64)
        expected = [lfsr_next(int(s), bits) for s in states]
        assert lfsr_next_array(states, bits).tolist() == expected


@pytest.mark.parametrize("bits,steps", [(5, 0), (5, 17), (14, 1000), (32, 123_456), (32, (1 << 32) - 1)])
def test_jump_equals_stepping(bits, steps):
    seed = 0b101 | (1 << (bits - 1))
    if steps == (1 << bits) - 1:
        assert lfsr_jump(seed, bits, steps) == seed  # a full period comes back
        return
    state = seed
    for _ in range(steps):
        state = lfsr_next(state, bits)
    assert lfsr_jump(seed, bits, steps) == state
