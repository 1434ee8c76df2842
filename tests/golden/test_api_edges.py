"""Golden API calls with values outside their contract: one ValueError naming the parameter and its range (issue 56's
audit: bare KeyErrors, silently accepted states, NaN through a cast, a NaN loss passing the blow-up check)."""

from __future__ import annotations

import numpy as np
import pytest

from pezo.golden.engine.calibration import quantize_rint
from pezo.golden.losses import check_blowup
from pezo.golden.rng.lfsr import LFSR_TAPS, lfsr_next, lfsr_period


@pytest.mark.parametrize(
    "state, bits, message",
    [
        (1, 0, r"bits must be an LFSR width in 3\.\.32, got 0"),
        (1, 2, r"bits must be an LFSR width in 3\.\.32, got 2"),
        (1, 33, r"bits must be an LFSR width"),
        (0, 14, r"state must be an integer in 1\.\.16383 for a 14-bit LFSR, got 0"),
        (1 << 14, 14, r"state must be an integer in 1\.\.16383 for a 14-bit LFSR, got 16384"),
        (-3, 14, r"state must be an integer in 1\.\.16383"),
        (None, 14, r"state must be an integer"),
        (2.0, 14, r"state must be an integer"),
    ],
)
def test_lfsr_next_names_a_bad_width_or_state(state, bits, message):
    with pytest.raises(ValueError, match=message):
        lfsr_next(state, bits)


def test_lfsr_period_names_a_bad_width_and_still_counts_every_width():
    with pytest.raises(ValueError, match=r"bits must be an LFSR width in 3\.\.32, got 2"):
        lfsr_period(2)
    for bits in (b for b in LFSR_TAPS if b <= 12):
        assert lfsr_period(bits) == (1 << bits) - 1
    assert lfsr_next(np.int64(5), 4) == lfsr_next(5, 4)


def test_quantize_rint_refuses_nan_and_saturates_infinities():
    with pytest.raises(ValueError, match=r"x must hold no NaN \(index \[1, 0\] is NaN\)"):
        quantize_rint(np.array([[0.5], [np.nan]]), 0)
    assert quantize_rint([np.inf, -np.inf, 2.5, -2.5], 0).tolist() == [127, -128, 2, -2]


@pytest.mark.parametrize(
    "start, loss, name", [(1.0, float("nan"), "loss"), (float("inf"), 2.0, "start"), (1.0, None, "loss")]
)
def test_check_blowup_refuses_a_loss_that_is_not_a_number(start, loss, name):
    with pytest.raises(ValueError, match=rf"{name} must be a finite number"):
        check_blowup(3, start, loss)


def test_check_blowup_still_stops_a_blown_up_run_and_spares_the_growing_families():
    from pezo.golden.losses import BLOWUP_FACTOR, LossBlowUp

    check_blowup(3, 0.7, 0.7 * 2)
    with pytest.raises(LossBlowUp):
        check_blowup(3, 0.7, BLOWUP_FACTOR * 1.5)
    check_blowup(3, 0.7, BLOWUP_FACTOR * 1.5, family="naive-int")
