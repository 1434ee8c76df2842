"""Golden contracts of the scale LUT, the CLT Gaussian array and the perturbation stream, plus the
quick Amaranth-simulator loop of their circuits (the cocotb proofs are in test_sim.py)."""

import math

import numpy as np
import pytest

from pezo.golden.config import PerturbConfig
from pezo.golden.rng import grng, scale
from pezo.golden.rng.perturb import STREAM_BITS, PerturbationStream, emit, scale_round, scale_shift
from pezo.golden.rng.pool import gaussian_expected_norm, pool_values
from pezo.sim.amaranth_sim import check_against_golden


# -- scale LUT -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cfg",
    [
        PerturbConfig(n_rngs=32, rng_bits=14, perturb_dim=1000),
        PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3),
        PerturbConfig(n_rngs=7, rng_bits=8, perturb_dim=2000),  # d > n * period: offsets wrap many times
        PerturbConfig(n_rngs=31, rng_bits=8, seed=77, perturb_dim=100),
    ],
    ids=lambda c: f"{c.n_rngs}x{c.rng_bits}-d{c.perturb_dim}",
)
def test_fft_norms_equal_the_urng_array(cfg):
    norms = scale.squared_norms(cfg)
    rng = np.random.default_rng(0)
    for start in rng.integers(0, cfg.lfsr_period, 12):
        assert norms[start] == scale.direct_squared_norm(cfg, int(start))


def test_lut_is_addressed_by_the_start_state_of_lane_0():
    cfg = PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3)
    lut, seq = scale.scale_lut(cfg), scale.lane_states(cfg)  # what lane 0 shows (the permuted state)
    shifts = scale.round_log2(scale.exact_factors(cfg))
    assert [lut[s] for s in seq] == shifts.tolist()
    assert lut.shape == (64,) and set(lut.tolist()) <= {0, 1, 2, 3}


def test_log_domain_rounding_and_clipping():
    eps = 1e-12
    f = np.exp2([0.5 - eps, 0.5 + eps, 1.5 - eps, 1.5 + eps, -3.0, 7.0])
    assert scale.round_log2(f).tolist() == [0, 1, 1, 2, 0, 3]
    # linear-domain rounding would send 1.45 (log2 = 0.54) down to 1; the log domain sends it to 2
    assert scale.round_log2(np.array([1.45])).tolist() == [1]


def test_exact_factor_restores_the_gaussian_norm():
    cfg = PerturbConfig(n_rngs=8, rng_bits=10, perturb_dim=50)
    factors = scale.exact_factors(cfg)
    norms = np.sqrt(scale.squared_norms(cfg)) / 2 ** (cfg.rng_bits - 1)
    assert np.allclose(factors * norms, gaussian_expected_norm(50), rtol=1e-12)
    # Monte Carlo of E||z_d|| itself (the target the factors use)
    z = np.random.default_rng(1).standard_normal((20000, 50))
    assert np.linalg.norm(z, axis=1).mean() == pytest.approx(gaussian_expected_norm(50), rel=3e-3)


def test_large_d_makes_the_lut_constant_and_overshoots_by_two_over_sqrt3():
    stats = scale.lut_statistics(PerturbConfig())  # d = 2^20: ||u|| concentrates at sqrt(d/3)
    assert stats["shift_histogram"] == {1: 16383}
    assert stats["norm_ratio_mean"] == pytest.approx(2 / math.sqrt(3), rel=1e-3)


def test_scale_lut_bad_width():
    with pytest.raises(ValueError, match=r"rng_bits must be in 3\.\.16 for the scale LUT"):
        scale.scale_lut(PerturbConfig(rng_bits=17))


# -- Gaussian generator ----------------------------------------------------------------------------
def test_grng_polynomial_is_primitive(gf2_x_power_mod):
    """x^127 + x + 1: x^(2^127) = x mod p with no root means irreducible (127 is prime), and
    2^127 - 1 is a Mersenne prime, so every irreducible p of degree 127 is primitive."""
    poly, x = (1 << 127) | 0b11, 0b10
    assert gf2_x_power_mod(1 << 127, poly, 127) == x
    assert poly & 1 and bin(poly).count("1") % 2 == 1  # p(0) = 1, p(1) = 1


def test_leap_is_96_lfsr_steps_and_seeds_are_distinct():
    cfg = PerturbConfig(strategy="gaussian", lanes=6, seed=9)
    seeds = grng.grng_seeds(cfg)
    assert len(set(seeds)) == 6 and all(0 < s < 1 << 127 for s in seeds)
    state = seeds[0]
    for _ in range(96):
        state = grng.lfsr_step(state)
    assert state == grng.leap(seeds[0])
    assert grng.output(0) == -1530 and grng.output((1 << 96) - 1) == 1530


def test_grng_statistics_pass_for_the_generator_and_fail_for_a_uniform():
    out = grng.GaussianArray(PerturbConfig(strategy="gaussian", lanes=8)).run(12_500)
    stats = grng.sample_statistics(out)
    assert stats["samples"] == 100_000 and stats["passed"], stats
    assert stats["kurtosis"] == pytest.approx(2.9, abs=0.07)
    uniform = np.random.default_rng(0).integers(-443, 444, 100_000)  # same variance, flat
    assert not grng.sample_statistics(uniform)["passed"]


def test_grng_rewind_replays():
    g = grng.GaussianArray(PerturbConfig(strategy="gaussian", lanes=3))
    g.step(en=True)
    before = g.lanes()
    g.step(save=True, en=True)  # saves the state before this edge's leap
    first = g.run(5)
    g.step(restore=True)
    assert np.array_equal(g.run(6), np.vstack([before, first]))


# -- the stream -------------------------------------------------------------------------------------
def test_round_half_up():
    assert scale_round([5, 6, 7, -5, -6, -7], -2).tolist() == [1, 2, 2, -1, -1, -2]  # x/4: 1.25 1.5 ...
    assert scale_round([3, -3], 2).tolist() == [12, -12]


@pytest.mark.parametrize(
    "cfg",
    [
        PerturbConfig(rng_bits=3, n_rngs=3, eps_shift=0, perturb_dim=1),
        PerturbConfig(strategy="pregen", pool_bits=4, eps_shift=0, perturb_dim=1),
        PerturbConfig(strategy="gaussian", eps_shift=0),
    ],
    ids=["otf", "pregen", "gaussian"],
)
def test_widest_values_fit_16_bits(cfg):
    """eps_shift = 0 and the narrowest sources give the largest left shifts: still inside 16 bits."""
    biggest = {"otf": (1 << (cfg.rng_bits - 1)) - 1, "pregen": (1 << (cfg.pool_bits - 1)) - 1, "gaussian": 1530}[
        cfg.strategy
    ]
    k = scale.SCALE_SHIFTS[1] if cfg.strategy == "otf" else 0
    top = emit(np.array([biggest, -biggest]), scale_shift(cfg, k), False)
    assert np.abs(top).max() < 1 << (STREAM_BITS - 1)


def _passes(stream: PerturbationStream, d: int):
    plus = stream.perturbation(d)
    stream.step(rewind=True, sign=True)
    minus = stream.perturbation(d)
    stream.step(rewind=True, sign=False)
    again = stream.perturbation(d)
    return plus, minus, again


@pytest.mark.parametrize("strategy", ["otf", "pregen", "gaussian"])
def test_minus_pass_mirrors_plus_and_rewind_replays(strategy):
    cfg = PerturbConfig(strategy=strategy, n_rngs=8, rng_bits=10, perturb_dim=100, eps_shift=9)
    stream = PerturbationStream(cfg)
    stream.step()  # the reset edge
    for _ in range(3):
        plus, minus, again = _passes(stream, 100)
        assert np.array_equal(minus, -plus) and np.array_equal(again, plus)
        assert np.any(plus != 0)
        stream.step(next=True)


def test_pregen_stream_is_the_pool_with_leftover_shift():
    cfg = PerturbConfig(strategy="pregen", perturb_dim=1000, eps_shift=10)  # a = 14 - 12 - 10 = -8
    pool = pool_values(cfg)
    stream = PerturbationStream(cfg)
    stream.step()
    for t in range(3):
        expected = scale_round(pool[(t * 1000 + np.arange(1000)) % cfg.pool_size], -8)
        assert np.array_equal(stream.perturbation(), expected)
        stream.step(next=True)


def test_otf_stream_is_the_aligned_urng_array_times_the_lut_shift():
    from pezo.golden.rng.urng import URNGArray

    cfg = PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3, eps_shift=0)  # a = k + 13 - 6 >= 0: exact
    lut = scale.scale_lut(cfg)
    array = URNGArray(cfg)
    stream = PerturbationStream(cfg)
    stream.step()
    ks = set()
    for _ in range(40):
        array.align()
        k = int(lut[int(array.raw_lanes()[0])])
        ks.add(k)
        expected = array.lanes()[:3] << (k + 7)
        assert np.array_equal(stream.perturbation(), expected)
        array.step()  # the stream consumed one vector
        stream.step(next=True)
    assert len(ks) >= 2


def test_gaussian_stream_is_the_clt_array():
    cfg = PerturbConfig(strategy="gaussian", lanes=4, eps_shift=4, perturb_dim=40)  # a = 0
    reference = grng.GaussianArray(cfg).run(10).reshape(-1)
    stream = PerturbationStream(cfg)
    stream.step()
    assert np.array_equal(stream.perturbation(), reference)


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"eps_shift": -1}, "eps_shift must be in 0..24, got -1"),
        ({"eps_shift": 25}, "eps_shift must be in 0..24, got 25"),
        ({"eps_shift": 1.5}, "eps_shift must be an integer in 0..24"),
    ],
)
def test_bad_eps_shift(kwargs, needle):
    with pytest.raises(ValueError, match=needle.replace(".", r"\.")):
        PerturbConfig(**kwargs)


def test_otf_stream_rejects_rng_bits_without_a_lut():
    from pezo.hw.rng.perturb import PerturbationStream as HwStream

    with pytest.raises(ValueError, match=r"rng_bits must be in 3\.\.16 for the scale LUT"):
        HwStream(PerturbConfig(rng_bits=20))


# -- Amaranth-simulator quick loop -------------------------------------------------------------------
@pytest.mark.parametrize(
    "bench,cfg",
    [
        ("scale", PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3)),
        ("gaussian", PerturbConfig(strategy="gaussian", lanes=3)),
        ("stream", PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3, eps_shift=3)),
        ("stream", PerturbConfig(n_rngs=32, rng_bits=14, perturb_dim=7, eps_shift=13)),
        ("stream", PerturbConfig(strategy="pregen", pool_size=37, pool_bits=6, lanes=8, banks=2, perturb_dim=50)),
        ("stream", PerturbConfig(strategy="gaussian", lanes=4, eps_shift=20)),
        ("scale", PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3, lfsr_leap=5)),
        ("stream", PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3, eps_shift=3, lfsr_leap=5)),
        ("stream", PerturbConfig(n_rngs=32, rng_bits=14, perturb_dim=7, eps_shift=13, lfsr_leap=14)),
        ("scale", PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3, lfsr_bit_order="spread")),
        ("stream", PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3, eps_shift=3, lfsr_bit_order="spread")),
        (
            "stream",
            PerturbConfig(n_rngs=31, rng_bits=8, perturb_dim=40, eps_shift=9, lfsr_bit_order="spread", lfsr_leap=7),
        ),
    ],
    ids=[
        "scale",
        "gaussian",
        "stream-otf-5x6",
        "stream-otf-32x14",
        "stream-pregen",
        "stream-gaussian",
        "scale-leap5",
        "stream-otf-5x6-leap5",
        "stream-otf-32x14-leap14",
        "scale-spread",
        "stream-otf-5x6-spread",
        "stream-otf-31x8-leap7-spread",
    ],
)
def test_hw_matches_golden_quick(bench, cfg):
    check_against_golden(bench, cfg, cycles=2000)


@pytest.mark.parametrize(
    "cfg",
    [
        PerturbConfig(strategy="pregen", pool_size=37, pool_bits=6, lanes=8, banks=2, perturb_dim=50),
        PerturbConfig(strategy="gaussian", lanes=4),
    ],
    ids=["pregen", "gaussian"],
)
def test_stream_latency_and_no_bubble_after_a_stall(cfg):
    from pezo.golden.rng.perturb import stream_latency

    stream = PerturbationStream(cfg)
    stream.step(next=True)
    edges = 0
    while not stream.valid:
        stream.step(en=True)
        edges += 1
    assert edges == stream_latency(cfg)  # edges after the NEXT edge
    first = stream.lanes().copy()
    for _ in range(3):
        stream.step(en=False)  # held: nothing moves
        assert stream.lanes().tolist() == first.tolist()
    vectors = [first]
    for _ in range(4):
        stream.step(en=True)
        assert stream.valid  # one vector per cycle once full, also right after the stall
        vectors.append(stream.lanes().copy())
    stream.step(rewind=True)
    replay = []
    while len(replay) < len(vectors):
        if stream.valid:
            replay.append(stream.lanes().copy())
        stream.step(en=True)
    assert [v.tolist() for v in replay] == [v.tolist() for v in vectors]


def test_signed_scale_round_is_the_negated_rounding_in_one_adder():
    """``hw.rng.perturb.signed_scale_round(x, a, negate)`` (the otf stream's lanes: the negation folded into the
    rounding adder as ~x) equals +-``golden.rng.perturb.scale_round(x, a)`` in 16 bits, for every 14-bit x and
    the shifts a = -8..3 (both signs of a, so both of its branches)."""
    from amaranth.hdl import Module, Signal, signed
    from amaranth.sim import Simulator

    from pezo.hw.rng.perturb import signed_scale_round

    m = Module()
    x, negate = Signal(signed(14)), Signal()
    outs = {a: Signal(signed(STREAM_BITS), name=f"shift_{a + 8}") for a in range(-8, 4)}
    m.d.comb += [out.eq(signed_scale_round(x, a, negate)) for a, out in outs.items()]
    xs = np.arange(-(1 << 13), 1 << 13)
    seen, wrong = [], []

    async def bench(ctx):
        for value in xs:
            for sign in (0, 1):
                ctx.set(x, int(value))
                ctx.set(negate, sign)
                for a, out in outs.items():
                    expected = int(scale_round(np.int64(value), a)) * (-1 if sign else 1)
                    expected = (expected + (1 << 15)) % (1 << 16) - (1 << 15)
                    seen.append(1)
                    if ctx.get(out) != expected:
                        wrong.append((int(value), a, sign))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert len(seen) == len(xs) * 2 * len(outs) and wrong == []
