"""golden.methods.niti: the ElasticZO-INT8 / NITI integer primitives on hand-worked cases, corners and float
references."""

from decimal import Decimal, getcontext

import numpy as np
import pytest

from pezo.golden.methods import niti


def softmax_minus_onehot(logits, exponent, labels):
    z = np.ldexp(np.asarray(logits, dtype=np.float64), exponent)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1
    return p


# -- format ------------------------------------------------------------------------------------
def test_bitwidth_is_the_clz_form():
    cases = {0: 0, 1: 1, -1: 1, 2: 2, 63: 6, 64: 7, 127: 7, -128: 8, 128: 8, 255: 8, 256: 9, 1 << 31: 32}
    for v, b in cases.items():
        assert niti.bitwidth([0, v]) == b, v
    assert niti.bitwidth(np.zeros((2, 3), dtype=np.int64)) == 0


def test_requantize_tensor_keeps_tensors_that_fit_and_shifts_the_rest_half_up():
    out, e = niti.requantize_tensor([100, -127, 5], -3)
    assert out.tolist() == [100, -127, 5] and e == -3
    # 2^10 is an exact power of two: paper b = 11 -> shift 4 (NITI-REF's ceil form would shift by 3)
    out, e = niti.requantize_tensor([1024, -1000, 1], 0)
    assert out.tolist() == [64, -62, 0] and e == 4
    # 128 = 2^7: paper b = 8 -> shift 1; the ceil form (7) would leave 128, outside int8
    out, e = niti.requantize_tensor(np.array([[128, -64], [3, -3]]), -5)
    assert out.tolist() == [[64, -32], [2, -1]] and e == -4  # ties +-1.5 -> 2, -1
    out, e = niti.requantize_tensor([255, -255, 254], 2)  # 127.5 rounds to 128, saturates at 127
    assert out.tolist() == [127, -127, 127] and e == 3
    out, e = niti.requantize_tensor([64, -1], 0)  # 64 = 2^6 needs 7 bits: fits
    assert out.tolist() == [64, -1] and e == 0
    out, e = niti.requantize_tensor([0, 0], 7)
    assert out.tolist() == [0, 0] and e == 7


def test_requantize_tensor_preserves_the_value():
    rng = np.random.default_rng(0)
    acc = rng.integers(-(1 << 20), 1 << 20, 500)
    out, e = niti.requantize_tensor(acc, -10)
    assert np.abs(out).max() <= 127 and niti.bitwidth(out) <= 7
    assert np.all(np.abs(np.ldexp(out.astype(float), e) - np.ldexp(acc.astype(float), -10)) <= 2.0 ** (e - 1))


def test_quantize_tensor_is_niti_input_quantiser():
    q, e = niti.quantize_tensor([0.5, -1.0, 0.25])  # max 1 -> e = ceil(log2 1) - 7 = -7
    assert q.tolist() == [64, -128, 32] and e == -7
    q, e = niti.quantize_tensor(np.array([3.0, -0.1, 0.046875]))  # e = 2 - 7; 0.046875 * 32 = 1.5 -> 2
    assert q.tolist() == [96, -3, 2] and e == -5


# -- pseudo-stochastic rounding ----------------------------------------------------------------------
def test_psr_even_shift_hand_worked():
    # max 6 -> bw 3, bits 1 -> shift 2, h = 1: hi = bit 1 of r, lo = bit 0 of r, up if hi > lo
    x = [6, 5, 7, 4, 3, 2, 1, 0, -6, -2]
    assert niti.pseudo_stochastic_round(x, 1).tolist() == [2, 1, 1, 1, 0, 1, 0, 0, -2, -1]
    # bits 2, max 13 -> shift 2: 13 = 3*4 + 1 (hi 0, lo 1) -> 3; 5 = 1*4 + 1 -> 1; 6 = 1*4 + 2 (hi 1, lo 0) -> 2
    assert niti.pseudo_stochastic_round([-13, 5, 6, 0], 2).tolist() == [-3, 1, 2, 0]


def test_psr_odd_shift_hand_worked():
    # max 15 -> bw 4, bits 1 -> shift 3, h = 1: hi = r >> 1 (2 bits), lo = (r & 1) << 1
    x = [15, 13, 12, 10, 9, 8, 6, 3, -13, -12]
    assert niti.pseudo_stochastic_round(x, 1).tolist() == [2, 1, 2, 2, 1, 1, 1, 0, -1, -2]
    # r_max = 63: 63 / 32 -> shift 5, r = 31, hi = 7, lo = 3 << 1 = 6 -> up: 2
    assert niti.pseudo_stochastic_round([63, -63, 32], 1).tolist() == [2, -2, 1]


def test_psr_passes_tensors_that_fit_and_saturates_the_rounded_ones():
    assert niti.pseudo_stochastic_round([3, -2, 0], 2).tolist() == [3, -2, 0]
    assert niti.pseudo_stochastic_round([300, -1], 9).tolist() == [300, -1]  # shift 0: unchanged
    assert niti.pseudo_stochastic_round([255, -255], 7).tolist() == [127, -127]  # 127 + 1 saturates
    assert niti.pseudo_stochastic_round(np.zeros(4, dtype=np.int64), 1).tolist() == [0] * 4


def test_psr_r_max_one_corner_case_keeps_the_update():
    # paper bitwidth: max|x| = 1 -> bw 1 -> shift 0 -> unchanged (NITI-REF's ceil form would zero it)
    for x in ([-1, 0, 1], [1, 1], [-1], [0, -1, 0]):
        assert niti.pseudo_stochastic_round(x, 1).tolist() == x


def test_psr_of_zo_updates_with_one_bit_moves_at_most_two_lsb_and_is_odd():
    rng = np.random.default_rng(1)
    seen = set()
    for r_max in (1, 3, 7, 15, 31, 63):
        for g in (-1, 1):
            for _ in range(20):
                z = rng.integers(-r_max, r_max + 1, 200) * (rng.random(200) > 0.33)
                out = niti.pseudo_stochastic_round(g * z, 1)
                seen |= set(np.abs(out).tolist())
                assert np.all(np.sign(out) * np.sign(g * z) >= 0)
    assert seen == {0, 1, 2}
    for bits in (1, 3, 5, 7, 12):
        x = rng.integers(-(1 << 20), 1 << 20, 300) >> rng.integers(0, 20, 300)
        assert np.array_equal(niti.pseudo_stochastic_round(-x, bits), -niti.pseudo_stochastic_round(x, bits))


@pytest.mark.parametrize("bits", [0, 16, -1, 1.0, True])
def test_psr_rejects_bad_bits(bits):
    with pytest.raises(ValueError, match="bits"):
        niti.pseudo_stochastic_round([5, 6], bits)


# -- integer CE sign ---------------------------------------------------------------------------
def test_integer_ce_sign_hand_worked():
    # s = -3: hat(8) = floor(8 * 47274 / 2^18) = 1; p = 1 - 10 -> SA = 2^9 + 2^10 + 2^9 = 2048 > SB = 3 * 2^9
    a, b = [[0, 8, 0]], [[0, 0, 0]]
    assert niti.integer_ce_sign(a, -3, b, -3, [0]) == 1
    assert niti.integer_ce_sign(b, -3, a, -3, [0]) == -1
    assert niti.integer_ce_sign([[0, 4, 0]], -2, a, -3, [0]) == 0  # same values once left-shifted to s = -3
    assert niti.integer_ce_sign([[0, 4, 0]], -2, b, -3, [0]) == 1
    # B = 2: sum of floor(log2 S): alpha 11 + 11, beta 10 + 10
    assert niti.integer_ce_sign([[0, 8, 0], [0, 8, 0]], -3, [[0, 0, 0], [0, 0, 0]], -3, [0, 0]) == 1
    assert niti.integer_ce_sign([[0, 8, 0], [0, 0, 0]], -3, [[0, 0, 0], [0, 8, 0]], -3, [0, 0]) == 0


def test_integer_ce_sign_floors_negative_hats():
    # hat(-8) = floor(-1.44) = -2, hat(-6) = floor(-1.08) = -2, hat(-4) = floor(-0.72) = -1; p = -10:
    # SA = 2^10 + 2^8 + 2^10 = 2304 > SB = 2^10 + 2^8 + 2^9 = 1792 (truncation would tie at 2560: g = 0)
    a, b = [[0, -8, 0]], [[0, -6, -4]]
    assert niti.integer_ce_sign(a, -3, b, -3, [0]) == 1 == niti.float_ce_sign(a, -3, b, -3, [0])


def test_integer_ce_sign_is_zero_for_identical_inputs():
    rng = np.random.default_rng(2)
    for batch in (1, 7, 32):
        x = rng.integers(-127, 128, (batch, 10))
        t = rng.integers(0, 10, batch)
        for s in (-6, -2, 0, 3):
            assert niti.integer_ce_sign(x, s, x.copy(), s, t) == 0
            assert niti.float_ce_sign(x, s, x.copy(), s, t) == 0
        assert niti.integer_ce_sign(x >> 1 << 1, -3, x >> 1, -2, t) == 0


@pytest.mark.parametrize("batch", [1, 32])
def test_integer_ce_sign_agrees_with_float_on_clear_cases(batch):
    rng = np.random.default_rng(3)
    for _ in range(100):
        base = rng.integers(-40, 41, (batch, 10))
        t = rng.integers(0, 10, batch)
        good = base.copy()
        good[np.arange(batch), t] += 60  # the label logit 60 LSB higher: much lower loss
        s = int(rng.integers(-4, -1))
        for a, b in ((base, good), (good, base)):
            f = niti.float_ce_sign(a, s, b, s, t)
            assert f != 0 and niti.integer_ce_sign(a, s, b, s, t) == f


@pytest.mark.parametrize("batch", [32, 1])
def test_integer_ce_sign_agreement_rate_on_noisy_pairs(batch):
    rng = np.random.default_rng(4)
    pairs, same = 2000, 0
    for _ in range(pairs):
        base = rng.integers(-64, 65, (batch, 10))
        t = rng.integers(0, 10, batch)
        a = np.clip(base + rng.integers(-8, 9, base.shape), -127, 127)
        b = np.clip(base + rng.integers(-8, 9, base.shape), -127, 127)
        s = int(rng.integers(-4, -1))
        same += niti.integer_ce_sign(a, s, b, s, t) == niti.float_ce_sign(a, s, b, s, t)
    print(f"B={batch}: integer/float sign agreement {same / pairs:.4f}")
    assert same / pairs >= 0.8


def test_cross_entropy_int8_matches_the_definition():
    o = np.array([[0, 8, 0], [16, 0, -16]])
    ce = niti.cross_entropy_int8(o, -3, [0, 2])
    ref = (np.log(2 + np.e) + (np.log(np.exp(2) + 1 + np.exp(-2)) + 2)) / 2
    assert ce == pytest.approx(ref, rel=1e-12)


# -- BP head -----------------------------------------------------------------------------------
def test_sto_shift_exact_multiples_and_determinism():
    rng = np.random.default_rng(5)
    assert niti.sto_shift([16, -16, 0, 48], 4, rng).tolist() == [1, -1, 0, 3]
    assert niti.sto_shift([7, -7], 0, rng).tolist() == [7, -7]
    x = np.arange(-40, 41)
    out = niti.sto_shift(x, 3, np.random.default_rng(9))
    u = np.random.default_rng(9).integers(0, 8, size=x.shape, dtype=np.int64)
    assert np.array_equal(out, (x >> 3) + (u < (x & 7)))
    assert np.all((out == x // 8) | (out == x // 8 + 1))


def test_sto_shift_is_unbiased():
    rng = np.random.default_rng(6)
    x = np.tile(np.array([5, -5, 37, -37, 1, -15]), (40000, 1))
    mean = niti.sto_shift(x, 4, rng).mean(axis=0)
    assert np.allclose(mean, x[0] / 16, atol=0.01)


def test_loss_gradient_hand_worked():
    # equal logits: q = (2^10 - 1) * 2^15 each, softmax 1024 / 2048, label 1024 - 2048; 4-bit shift exact
    err, e = niti.loss_gradient_int8([[0, 0]], 0, [0], np.random.default_rng(0))
    assert err.tolist() == [[-64, 64]] and e == 0
    # far apart: the small term clamps to exactly 0; 2048 / 16 = 128 saturates at 127
    err, e = niti.loss_gradient_int8([[127, -127], [127, -127]], 0, [1, 0], np.random.default_rng(0))
    assert err.tolist() == [[127, -127], [0, 0]]


def test_loss_gradient_shapes_signs_and_float_agreement():
    rng = np.random.default_rng(7)
    for exponent in range(-10, 3):
        o = rng.integers(-127, 128, (64, 10))
        t = rng.integers(0, 10, 64)
        err, e = niti.loss_gradient_int8(o, exponent, t, rng)
        assert err.shape == (64, 10) and err.dtype == np.int64 and e == 0
        label = np.zeros_like(err, dtype=bool)
        label[np.arange(64), t] = True
        assert np.all(err[label] <= 0) and np.all(err[~label] >= 0)
        diff = np.abs(err * 2.0**-7 - softmax_minus_onehot(o, exponent, t)) * 128
        assert diff.max() <= 2.0 and diff.mean() < 0.4, exponent
    # plain integer powers (frac_bits = 0) are coarse but keep the signs
    err, _ = niti.loss_gradient_int8(o, -3, t, rng, frac_bits=0)
    assert np.all(err[label] <= 0) and np.all(err[~label] >= 0)


def test_exp2_rom_is_round_half_up_of_the_exact_powers():
    getcontext().prec = 60
    for frac_bits in (0, 3, 6):
        table = niti.exp2_table(frac_bits)
        n = 1 << frac_bits
        exact = [Decimal(2) ** (Decimal(niti.EXP2_Q) + Decimal(k) / n) for k in range(n)]
        assert list(table) == [int((x + Decimal("0.5")).to_integral_value(rounding="ROUND_FLOOR")) for x in exact]


def test_fc_backward_hand_worked():
    err, weight, act = [[1, -1]], [[2, 3], [1, 1]], [[5, -4]]
    err_in, e, grad = niti.fc_backward_int8(err, -2, weight, act, 5)
    assert err_in.tolist() == [[1, 2]] and e == -2 and grad.tolist() == [[5, -4], [-5, 4]]
    _, _, grad = niti.fc_backward_int8(err, -2, weight, act, 1)  # shift 2: 5 -> 1, 4 -> 1
    assert grad.tolist() == [[1, -1], [-1, 1]]


def test_fc_backward_is_exact_against_float64():
    rng = np.random.default_rng(8)
    err = rng.integers(-127, 128, (16, 10))
    weight = rng.integers(-127, 128, (10, 84))
    act = rng.integers(0, 128, (16, 84))
    err_in, e, grad = niti.fc_backward_int8(err, 0, weight, act, 4)
    assert err_in.shape == (16, 84) and grad.shape == (10, 84)
    ref = err.astype(np.float64) @ weight.astype(np.float64)
    shift = int(np.floor(np.log2(np.abs(ref).max()))) + 1 - 7
    assert e == shift
    assert np.array_equal(err_in, np.clip(np.floor(ref / 2.0**shift + 0.5), -127, 127))
    ref_g = err.T.astype(np.float64) @ act.astype(np.float64)
    assert np.array_equal(grad, niti.pseudo_stochastic_round(ref_g.astype(np.int64), 4))
    assert np.abs(grad).max() <= 16


def test_relu_backward():
    out = niti.relu_backward([[3, -2, 5], [1, 1, -7]], [[1, 0, -3], [127, 2, 9]])
    assert out.tolist() == [[3, 0, 0], [1, 1, -7]]


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: niti.integer_ce_sign([[1, 2]], 0, [[1, 2, 3]], 0, [0]), "beta"),
        (lambda: niti.integer_ce_sign([[1, 2]], 0, [[1, 2]], 0, [2]), "labels"),
        (lambda: niti.integer_ce_sign([[1, 2]], 0, [[1, 2]], 0, [0, 1]), "labels"),
        (lambda: niti.integer_ce_sign([[1, 200]], 0, [[1, 2]], 0, [0]), "alpha"),
        (lambda: niti.integer_ce_sign([[1, 2]], 40, [[1, 2]], 0, [0]), "s_alpha"),
        (lambda: niti.float_ce_sign([[1, 2]], 0, [[1.5, 2]], 0, [0]), "beta"),
        (lambda: niti.loss_gradient_int8([[1, 2]], 0, [0, 0], np.random.default_rng()), "labels"),
        (lambda: niti.loss_gradient_int8([[1, 2]], 0, [0], np.random.default_rng(), frac_bits=9), "frac_bits"),
        (lambda: niti.sto_shift([1], 4, None), "rng"),
        (lambda: niti.sto_shift([1], 32, np.random.default_rng()), "shift"),
        (lambda: niti.fc_backward_int8([[1, 2]], 0, [[1, 2, 3]], [[1, 2, 3]], 3), "weight"),
        (lambda: niti.fc_backward_int8([[1, 2]], 0, [[1], [2]], [[1, 2]], 3), "act_in"),
        (lambda: niti.fc_backward_int8([[1, 2]], 0, [[1], [2]], [[1]], 0), "grad_bits"),
        (lambda: niti.relu_backward([1, 2], [1, 2, 3]), "act"),
        (lambda: niti.requantize_tensor([1.0, 2.0], 0), "acc"),
        (lambda: niti.requantize_tensor([1 << 33], 0), "acc"),
        (lambda: niti.requantize_tensor([1], 0.5), "exponent"),
    ],
)
def test_bad_input_raises_one_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
