"""XORShift32 (13, 17, 5) and its Rademacher sampler (``golden.methods.xorshift``): the Poor Man's paper's
Appendix C test vectors, the vectorised generator against the plain loop, the GF(2) jump-ahead, and
the Sampler contract."""

import numpy as np
import pytest

from pezo.golden.methods import xorshift as xs
from pezo.golden.methods.xorshift import (
    IDENTITY,
    PERIOD,
    XorShiftRademacherSampler,
    jump_matrix,
    rademacher,
    stream_seed,
    xorshift32,
    xorshift32_jump,
    xorshift32_reference,
)
from pezo.golden.zo.families import Sampler

SEED1 = [270369, 67634689, 2647435461, 307599695, 2398689233, 745495504, 632435482, 435756210, 2005365029, 2916098932]
SEED1_SIGNS = [-1, -1, -1, -1, -1, +1, +1, +1, -1, +1]
MARSAGLIA_SEED = 2463534242
MARSAGLIA = [
    723471715,
    2497366906,
    2064144800,
    2008045182,
    3532304609,
    374114282,
    1350636274,
    691148861,
    746858951,
    2653896249,
]
MARSAGLIA_SIGNS = [-1, +1, +1, +1, -1, +1, +1, -1, -1, -1]


# -- test vectors (digest-poormans.md section 10) ------------------------------------------------------
@pytest.mark.parametrize("seed, words, signs", [(1, SEED1, SEED1_SIGNS), (MARSAGLIA_SEED, MARSAGLIA, MARSAGLIA_SIGNS)])
def test_digest_vectors(seed, words, signs):
    assert xorshift32_reference(seed, 10) == words
    out = xorshift32(seed, 10)
    assert out.dtype == np.uint32 and out.tolist() == words
    r = rademacher(seed, 10)
    assert r.dtype == np.int8 and r.tolist() == signs


def test_minus_one_fraction_200k():
    r = rademacher(1, 200_000)
    assert int(np.count_nonzero(r == -1)) == 100_057  # fraction 0.500285
    assert set(np.unique(r).tolist()) == {-1, 1}


# -- vectorised == reference ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "count", [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 97, 255, 256, 257, 1009, 4096, 10_007, 65_537, 100_000]
)
def test_vectorised_equals_reference(count):
    for seed in (1, 0xFFFFFFFF, 0x80000000, 12345):
        ref = xorshift32_reference(seed, count)
        out = xorshift32(seed, count)
        assert out.dtype == np.uint32 and out.shape == (count,)
        assert out.tolist() == ref, (seed, count)


def test_skip_is_random_access():
    ref = xorshift32_reference(99, 3000)
    for skip, count in [(0, 3000), (1, 10), (17, 1000), (2999, 1), (1234, 0), (500, 2500)]:
        assert xorshift32(99, count, skip=skip).tolist() == ref[skip : skip + count]
        assert rademacher(99, count, skip=skip).tolist() == [-1 if w & 1 else 1 for w in ref[skip : skip + count]]


def test_jump_matches_steps_and_full_period():
    state = 7
    for steps in (0, 1, 2, 31, 1000):
        expect = ([7] + xorshift32_reference(7, steps))[steps]
        assert xorshift32_jump(state, steps) == expect
        assert xs._apply(jump_matrix(steps), state) == expect
    # maximal length: T^(2^32 - 1) = I and T^((2^32 - 1)/p) != I for every prime p | 2^32 - 1
    assert jump_matrix(PERIOD) == IDENTITY
    for p in (3, 5, 17, 257, 65537):
        assert jump_matrix(PERIOD // p) != IDENTITY
    assert xorshift32_jump(1, PERIOD) == 1 and xorshift32_jump(0, 12345) == 0


@pytest.mark.parametrize("bad", [0, -1, 1 << 32, 1.0, True, "1", None])
def test_seed_rejected(bad):
    for fn in (xorshift32_reference, xorshift32, rademacher):
        with pytest.raises(ValueError, match="seed must be"):
            fn(bad, 4)
    with pytest.raises(ValueError, match="seed must be"):
        XorShiftRademacherSampler(10, bad)


def test_seed_zero_message_and_bad_count():
    with pytest.raises(ValueError, match=r"seed must be in 1\.\.2\^32-1"):
        xorshift32(0, 1)
    for fn in (xorshift32_reference, xorshift32, rademacher):
        with pytest.raises(ValueError, match="count must be"):
            fn(1, -1)
    with pytest.raises(ValueError, match="skip must be"):
        xorshift32(1, 1, skip=-1)
    assert xorshift32(np.uint32(5), np.int64(3)).tolist() == xorshift32_reference(5, 3)


# -- sampler -------------------------------------------------------------------------------------------
def test_sampler_contract():
    dim = 777
    s = XorShiftRademacherSampler(dim, seed=42)
    assert isinstance(s, Sampler) and s.family == "xorshift-rademacher"
    assert s.describe() == {"family": "xorshift-rademacher", "dim": dim, "seed": 42, "options": {}}
    assert repr(s) == "make_sampler('xorshift-rademacher', 777, seed=42)"
    z = s.perturbation(3)
    assert z.dtype == np.float32 and z.shape == (dim,) and set(np.unique(z).tolist()) == {-1.0, 1.0}
    # element j is the Rademacher value of draw j + 1 of the stream seeded with stream_seed(seed, index)
    seed3 = s.stream_seed(3)
    assert seed3 == stream_seed(42, 3) and 1 <= seed3 <= 0xFFFFFFFF
    assert z.tolist() == [-1.0 if w & 1 else 1.0 for w in xorshift32_reference(seed3, dim)]
    # deterministic, stateless, distinct across index and seed
    assert np.array_equal(z, s.perturbation(3))
    assert np.array_equal(z, XorShiftRademacherSampler(dim, seed=42).perturbation(np.int64(3)))
    assert not np.array_equal(z, s.perturbation(4))
    assert not np.array_equal(z, XorShiftRademacherSampler(dim, seed=43).perturbation(3))
    # random access: a segment equals the slice of the whole, in any order and partition
    for offset, size in [(0, 0), (0, 1), (5, 100), (400, 377), (776, 1), (777, 0), (123, 456)]:
        assert np.array_equal(s.segment(3, offset, size), z[offset : offset + size])
    s.perturbation(9)
    parts = [s.segment(3, o, n) for o, n in [(700, 77), (0, 300), (300, 400)]]
    assert np.array_equal(np.concatenate([parts[1], parts[2], parts[0]]), z)


def test_stream_seed_derivation():
    # SplitMix64 of seed * 2^32 + index, folded to 32 bits, 0 -> 1
    z = xs.splitmix64(((5 << 32) + 8) & ((1 << 64) - 1))
    assert stream_seed(5, 8) == ((z ^ (z >> 32)) & 0xFFFFFFFF or 1)
    seeds = {stream_seed(1, i) for i in range(10_000)}
    assert len(seeds) == 10_000 and 0 not in seeds
    assert xs.splitmix64(0) == 0xE220A8397B1DCDAF  # SplitMix64's first output for state 0


def test_sampler_balance_and_bad_input():
    s = XorShiftRademacherSampler(4096, seed=1)
    z = np.stack([s.perturbation(i) for i in range(50)])
    assert abs(float(z.mean())) < 0.01  # 204800 values, sd of the mean 0.0022
    with pytest.raises(ValueError, match="index must be"):
        s.segment(-1, 0, 1)
    with pytest.raises(ValueError, match="size must be"):
        s.segment(0, 4000, 97)
    with pytest.raises(ValueError, match="dim must be"):
        XorShiftRademacherSampler(0)
