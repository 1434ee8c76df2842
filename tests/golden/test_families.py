"""The perturbation-family samplers (``golden.zo.families``): the interface contract, the moments, equality
with the hardware stream's order (``golden.rng.perturb.PerturbationStream``), PeZO's Eq. 3-5 norm
matching, and the parameter policy."""

import json
import math
import tracemalloc
import warnings

import numpy as np
import pytest

from pezo.golden.rng.perturb import PerturbationStream, scale_round, scale_shift
from pezo.golden.rng.pool import gaussian_expected_norm
from pezo.golden.rng.scale import element_offsets, exact_factors, lane_states, lut_statistics, msequence
from pezo.golden.zo import families
from pezo.golden.zo.families import FAMILIES, PowerOfTwoWarning, make_sampler

SMALL = {  # one small configuration per family, quick to build
    "gaussian": {},
    "rademacher": {},
    "uniform": {},
    "naive-int": {"n_rngs": 7, "rng_bits": 8},
    "pezo-pregen": {"pool_size": 255},
    "pezo-otf": {"n_rngs": 7, "rng_bits": 8},
}
PARTITION = [1, 383, 384, 0, 1000, 7, 1536, 692]  # uneven, with an empty segment; sums to 4003
DIM = sum(PARTITION)


def segments(sampler, index, sizes=PARTITION):
    out, offset = [], 0
    for size in sizes:
        out.append(sampler.segment(index, offset, size))
        offset += size
    return out


def norm(z):
    return float(np.linalg.norm(z.astype(np.float64)))


# -- interface contract ----------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_interface_contract(family):
    sampler = make_sampler(family, DIM, seed=3, **SMALL[family])
    z = sampler.perturbation(5)
    assert z.dtype == np.float32 and z.shape == (DIM,)
    assert np.array_equal(z, sampler.perturbation(5))  # deterministic
    assert np.array_equal(z, make_sampler(family, DIM, seed=3, **SMALL[family]).perturbation(5))  # no state
    assert not np.array_equal(z, sampler.perturbation(6))
    assert np.array_equal(z, sampler.perturbation(np.int64(5)))
    parts = segments(sampler, 9)
    assert all(p.dtype == np.float32 for p in parts) and [p.size for p in parts] == PARTITION
    # random access: any order of segment calls, any interleaving with other indices, gives the same
    sampler.perturbation(11)
    assert all(np.array_equal(a, b) for a, b in zip(parts[::-1], segments(sampler, 9)[::-1]))
    assert sampler.segment(9, DIM, 0).shape == (0,)
    if family not in ("gaussian", "rademacher", "uniform"):  # the LFSR / pool families: a pure stream position
        assert np.array_equal(np.concatenate(parts), sampler.perturbation(9))
    else:  # keyed by the segment offset (documented): a partition changes the values, like MeZO's
        whole = sampler.perturbation(9)  # per-parameter torch.normal calls
        assert not np.array_equal(np.concatenate(parts), whole)
    description = sampler.describe()
    assert description["family"] == family and description["dim"] == DIM
    assert description["options"] == sampler.options()
    json.dumps(description)
    assert family in repr(sampler)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_stream_read_in_pieces_is_the_segment(family):
    sampler = make_sampler(family, DIM, seed=3, **SMALL[family])
    offset, size = PARTITION[0], PARTITION[1]
    stream = sampler.stream(7, offset, size)
    pieces, left = [], size
    for count in (1, 0, 5, 2, size):  # uneven pieces, the last one the rest
        count = min(count, left)
        pieces.append(stream.read(np.empty(count, dtype=np.float32)).copy())
        left -= count
    assert np.array_equal(np.concatenate(pieces), sampler.segment(7, offset, size))
    with pytest.raises(ValueError, match="passes the segment's end"):
        stream.read(np.empty(1, dtype=np.float32))
    with pytest.raises(ValueError, match="size must be in"):
        sampler.stream(7, DIM - 1, 2)


@pytest.mark.parametrize("family", ["gaussian", "rademacher", "uniform"])
def test_seed_changes_the_numpy_families(family):
    assert not np.array_equal(
        make_sampler(family, 100, seed=1).perturbation(0), make_sampler(family, 100, seed=2).perturbation(0)
    )


@pytest.mark.parametrize("family,mean_sq", [("gaussian", 1.0), ("uniform", 1 / 3), ("rademacher", 1.0)])
def test_moments(family, mean_sq):
    d = 400_000
    z = make_sampler(family, d, seed=7).perturbation(0).astype(np.float64)
    se = math.sqrt(mean_sq / d)
    assert abs(z.mean()) < 5 * se
    assert z.var() == pytest.approx(mean_sq, rel=0.01)
    if family == "rademacher":
        assert set(np.unique(z)) == {-1.0, 1.0}
    if family == "uniform":
        assert z.min() >= -1.0 and z.max() < 1.0
        assert np.mean(z**4) == pytest.approx(1 / 5, rel=0.02)  # uniform, not some other law
    if family == "gaussian":
        assert np.mean(z**4) == pytest.approx(3.0, rel=0.03)
        assert np.mean(np.abs(z) < 1) == pytest.approx(math.erf(1 / math.sqrt(2)), abs=0.005)


def test_uniform_norm_is_sqrt3_below_gaussian():
    d = 100_000
    u = norm(make_sampler("uniform", d).perturbation(0))
    assert u == pytest.approx(gaussian_expected_norm(d) / math.sqrt(3), rel=0.01)


# -- naive-int: the raw URNG integers (PeZO Table 3's collapsing row) ---------------------------------
@pytest.mark.parametrize("n,b,d", [(31, 14, 770), (31, 8, 770), (7, 8, 4003), (7, 6, 97)])
def test_naive_int_values_are_the_signed_lane_integers(n, b, d):
    """Element j of perturbation t is the m-sequence state at (e_t + element_offsets[j]) mod (2^b - 1) minus
    2^(b-1), as float32, with no scaling: integers in [-(2^(b-1) - 1), 2^(b-1) - 1], both ends reached."""
    sampler = make_sampler("naive-int", d, seed=5, n_rngs=n, rng_bits=b)
    assert sampler.options() == {"n_rngs": n, "rng_bits": b} and sampler.family == "naive-int"
    seq = msequence(sampler.config).astype(np.int64) - 2 ** (b - 1)
    offsets = element_offsets(sampler.config)
    top = 2 ** (b - 1) - 1
    seen = []
    for t in range(8):
        z = sampler.perturbation(t)
        assert z.dtype == np.float32 and z.shape == (d,)
        expected = seq[(sampler.start_index(t) + offsets) % len(seq)]
        assert np.array_equal(z, expected.astype(np.float32))  # exact integers, no rounding
        assert np.abs(z).max() <= top and 0 not in expected + 2 ** (b - 1)  # the state 0 never occurs
        assert sampler.scale_factor(t) == 2.0 ** (b - 1)
        seen.append(z)
    values = np.concatenate(seen)
    if values.size >= 4 * 2**b:
        assert values.min() == -top and values.max() == top


def test_naive_int_is_pezo_otf_unscaled_times_2_to_b_minus_1_and_deterministic_by_index():
    d = 1000
    naive = make_sampler("naive-int", d, seed=9, rng_bits=12)
    otf = make_sampler("pezo-otf", d, seed=9, rng_bits=12, scaling="none", bit_order="natural")
    for t in (0, 1, 2, 17, 2**40):
        z = naive.perturbation(t)
        assert np.array_equal(z, otf.perturbation(t) * np.float32(2**11))
        assert np.array_equal(z, make_sampler("naive-int", d, seed=9, rng_bits=12).perturbation(t))  # pure in t
        assert np.array_equal(naive.segment(t, 123, 400), z[123:523])
    assert not np.array_equal(naive.perturbation(0), naive.perturbation(1))
    assert not np.array_equal(naive.perturbation(0), make_sampler("naive-int", d, seed=10, rng_bits=12).perturbation(0))


@pytest.mark.parametrize("b", [8, 14])
def test_naive_int_norm_is_2_to_b_minus_1_over_sqrt3_times_gaussian(b):
    """E z_j^2 = (2^(b-1) - 1) 2^(b-1) / 3 over a full m-sequence: the perturbation is ~2^(b-1)/sqrt(3) times
    MeZO's in norm (73.6x at b = 8, 4729x at b = 14) -- the overly large perturbation of PeZO Sec. 3.2."""
    d = 20_000
    sampler = make_sampler("naive-int", d, rng_bits=b)
    ratio = np.mean([norm(sampler.perturbation(t)) for t in range(10)]) / gaussian_expected_norm(d)
    expected = math.sqrt((2 ** (b - 1) - 1) * 2 ** (b - 1) / 3)
    assert ratio == pytest.approx(expected, rel=0.02)
    assert ratio > 70


# -- the PeZO families equal the hardware stream, value for value, in order -------------------------
def stream_perturbations(config, count):
    """What a consumer taking d values per perturbation (en on every valid cycle), then pulsing next,
    reads from the cycle model."""
    stream = PerturbationStream(config)
    out = []
    for _ in range(count):
        out.append(stream.perturbation())
        stream.step(next=True)
    return out


def check_against_stream(sampler, config, integers):
    """sampler values x 2^(12 - eps_shift) == the stream's integers (via the stream's own rounding when
    its shift a is negative)."""
    negative = False
    for t, got in enumerate(integers):
        z = sampler.perturbation(t)
        if config.strategy == "otf":
            k = sampler.scale_shift(t)
            a = scale_shift(config, k)
            source_units = 2.0 ** (config.rng_bits - 1 - k)  # z -> LFSR lane value v
        else:
            a = scale_shift(config)
            source_units = 2.0 ** (config.pool_bits - 2)  # z -> pool value q
        if a >= 0:
            expected = z.astype(np.float64) * 2.0 ** (12 - config.eps_shift)
            assert np.array_equal(expected, np.rint(expected))
        else:
            negative = True
            source = z.astype(np.float64) * source_units
            assert np.array_equal(source, np.rint(source))
            expected = scale_round(source.astype(np.int64), a)
        assert got.shape == (config.perturb_dim,)
        assert np.array_equal(got, expected.astype(np.int64)), f"perturbation {t}"
    return negative


@pytest.mark.parametrize(
    "n,b,d,leap",
    [
        (7, 8, 1000, 1),
        (31, 14, 97, 1),
        (31, 10, 1000, 1),
        (7, 12, 97, 1),
        (5, 6, 3, 1),
        (31, 14, 1000, 1),
        (31, 14, 1000, 14),
        (7, 8, 1000, 8),
        (5, 6, 3, 5),
        (32, 14, 97, 14),
        (7, 8, 1000, "spread"),
        (31, 14, 97, "spread"),
        (5, 6, 3, "spread"),
        (31, 14, 1000, (5, "spread")),
    ],
)
@pytest.mark.filterwarnings("ignore::pezo.golden.zo.families.PowerOfTwoWarning")
def test_otf_equals_the_hardware_stream(n, b, d, leap):
    leap, bit_order = leap if isinstance(leap, tuple) else (1, leap) if isinstance(leap, str) else (leap, "natural")
    options = ({"leap": leap} if leap != 1 else {}) | {"bit_order": bit_order}
    sampler = make_sampler("pezo-otf", d, seed=5, n_rngs=n, rng_bits=b, **options)  # scaling="lut": the hardware's
    assert sampler.config.lfsr_leap == leap and sampler.config.lfsr_bit_order == bit_order
    k = {sampler.scale_shift(t) for t in range(6)}
    # eps_shift making every shift a = k + 13 - b - eps_shift >= 0 where the range allows, and 12
    for eps_shift in sorted({max(0, min(k) + 13 - b), 12}):
        config = sampler.config.replace(eps_shift=eps_shift)
        check_against_stream(sampler, config, stream_perturbations(config, 6))


@pytest.mark.parametrize("leap", [1, 5])
def test_otf_start_index_closed_form(leap):
    n, b, d = 7, 6, 200
    sampler = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, leap=leap)
    seq = msequence(sampler.config)
    stream = PerturbationStream(sampler.config)
    for t in range(20):
        while not stream.valid:  # the aligner runs to the rotation; then element 0 is on the port
            stream.step()
        e = leap * t * n * math.ceil(d / n**2) % (2**b - 1)
        assert sampler.start_index(t) == e
        assert stream.source.pointer == 0 and stream.source.snapshot().states[0] == seq[e]
        assert stream.k == sampler.scale_shift(t)
        stream.perturbation()
        stream.step(next=True)


@pytest.mark.parametrize(
    "n,b,d,leap",
    [(7, 8, 200_000, 1), (31, 8, 150_001, 1), (1, 5, 140_001, 1), (7, 8, 200_000, 8), (31, 14, 150_001, 14)],
)
def test_otf_chunked_fast_path_equals_element_offsets(n, b, d, leap):
    """Several offset chunks (d > 65 536): the fast path equals element_offsets taken literally."""
    for scaling in ("none", "exact"):
        sampler = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, scaling=scaling, leap=leap)
        assert sampler.chunk < d
        seq = lane_states(sampler.config).astype(np.int64) - 2 ** (b - 1)  # what the lanes show
        offsets = element_offsets(sampler.config)
        for t in (0, 3):
            e = sampler.start_index(t)
            expected = seq[(e + offsets) % len(seq)] / 2.0 ** (b - 1) * sampler.scale_factor(t)
            z = sampler.perturbation(t)
            np.testing.assert_allclose(z, expected, rtol=1e-6, atol=0)
            cut = [1, sampler.chunk - 1, 2, sampler.chunk, d - 2 * sampler.chunk - 2]
            assert np.array_equal(np.concatenate(segments(sampler, t, cut)), z)


@pytest.mark.parametrize("pool,d", [(255, 1000), (4095, 97), (4095, 1000), (255, 97)])
def test_pregen_equals_the_hardware_stream(pool, d):
    sampler = make_sampler("pezo-pregen", d, seed=9, pool_size=pool)
    for eps_shift, lanes in ((2, 8), (12, 8), (0, 1)):  # a = 14 - pool_bits - eps_shift: 0, -10, 2
        config = sampler.config.replace(eps_shift=eps_shift, lanes=lanes, banks=lanes)
        negative = check_against_stream(sampler, config, stream_perturbations(config, 5))
        assert negative == (eps_shift > 2)


def test_pregen_leftover_shift_and_long_segments():
    d, pool = 10_007, 255  # d > N: a segment wraps the pool many times (doubling copies)
    sampler = make_sampler("pezo-pregen", d, pool_size=pool)
    for t in (0, 1, 7):
        assert sampler.start(t) == t * d % pool
        expected = sampler.pool[(t * d + np.arange(d)) % pool]
        assert np.array_equal(sampler.perturbation(t), expected)
        assert np.array_equal(sampler.segment(t, 300, 5000), expected[300:5300])


# -- PeZO Eq. 3-5: modulus scaling against the expected Gaussian norm --------------------------------
@pytest.mark.parametrize("d", [1, 2, 3, 10, 50, 99, 100, 101, 150, 300])
def test_expected_norm_equals_the_gamma_ratio(d):
    exact = math.sqrt(2) * math.gamma((d + 1) / 2) / math.gamma(d / 2)
    assert gaussian_expected_norm(d) == pytest.approx(exact, rel=1e-11)


def test_expected_norm_large_d_and_monte_carlo():
    for d in (1000, 10**6):  # the lgamma form (Eq. 5) at large d, where it loses a few digits
        lg = math.exp(0.5 * math.log(2) + math.lgamma((d + 1) / 2) - math.lgamma(d / 2))
        assert gaussian_expected_norm(d) == pytest.approx(lg, rel=1e-9)
    rng = np.random.default_rng(1)
    for d in (3, 10):
        norms = np.linalg.norm(rng.standard_normal((200_000, d)), axis=1)
        assert norms.mean() == pytest.approx(gaussian_expected_norm(d), rel=0.005)


@pytest.mark.parametrize("n,b,d", [(31, 14, 1000), (31, 12, 4000), (7, 8, 97)])
def test_otf_exact_scaling_matches_the_expected_norm(n, b, d):
    sampler = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, scaling="exact")
    unscaled = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, scaling="none")
    target = gaussian_expected_norm(d)
    for t in range(60):
        z = sampler.perturbation(t)
        assert norm(z) == pytest.approx(target, rel=1e-4)
        u = unscaled.perturbation(t)
        assert norm(u) == pytest.approx(target / sampler.scale_factor(t), rel=1e-4)
        assert sampler.scale_factor(t) == exact_factors(sampler.config)[sampler.start_index(t)]


@pytest.mark.parametrize("n,b,d", [(31, 14, 1000), (31, 14, 97), (7, 8, 1000)])
def test_otf_lut_scaling_stays_in_the_power_of_two_band(n, b, d):
    sampler = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b)
    exact = make_sampler("pezo-otf", d, n_rngs=n, rng_bits=b, scaling="exact")
    stats = lut_statistics(sampler.config)
    target = gaussian_expected_norm(d)
    ratios = []
    for t in range(200):
        ratio = norm(sampler.perturbation(t)) / target
        k = sampler.scale_shift(t)
        assert sampler.scale_factor(t) == 2.0**k
        log_factor = math.log2(exact.scale_factor(t))
        if -0.5 <= log_factor < 3.5:  # not clipped: nearest power of two in the log domain
            assert 2**-0.5 <= ratio <= 2**0.5
            assert k == math.floor(log_factor + 0.5)
        # the LUT value is the exact one times 2^k / factor, element for element
        np.testing.assert_allclose(
            sampler.perturbation(t), exact.perturbation(t) * (2.0**k / exact.scale_factor(t)), rtol=1e-5
        )
        ratios.append(ratio)
    assert 0.7 <= np.mean(ratios) <= 1.42
    assert np.mean(ratios) == pytest.approx(stats["norm_ratio_mean"], abs=0.02)
    assert stats["norm_ratio_min"] - 1e-6 <= min(ratios) and max(ratios) <= stats["norm_ratio_max"] + 1e-6


@pytest.mark.parametrize("pool,d", [(4095, 1000), (255, 97), (4095, 20_011)])
def test_pregen_mean_norm(pool, d):
    sampler = make_sampler("pezo-pregen", d, pool_size=pool)
    norms = [norm(sampler.perturbation(t)) for t in range(300)]
    assert np.mean(norms) == pytest.approx(gaussian_expected_norm(d), rel=0.02)


def test_gaussian_mean_norm():
    d = 1000
    sampler = make_sampler("gaussian", d)
    norms = [norm(sampler.perturbation(t)) for t in range(200)]
    assert np.mean(norms) == pytest.approx(gaussian_expected_norm(d), rel=0.01)


# -- memory: a segment allocates its output and O(1) scratch -----------------------------------------
@pytest.mark.parametrize(
    "family,options", [("pezo-otf", {"n_rngs": 31, "rng_bits": 14}), ("pezo-pregen", {}), ("gaussian", {})]
)
def test_segment_allocates_only_its_output(family, options):
    d, size = 500_000, 100_000
    sampler = make_sampler(family, d, **options)
    sampler.segment(1, 0, size)  # warm the scaled-table cache
    tracemalloc.start()
    try:
        z = sampler.segment(1, 123_457, size)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert z.nbytes == 4 * size
    assert peak < 4 * size + 64 * 1024


# -- parameter policy ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: make_sampler("normal", 10), "family must be one of gaussian, rademacher"),
        (lambda: make_sampler("gaussian", 0), "dim must be in 1.."),
        (lambda: make_sampler("pezo-otf", 2**31), "dim must be in 1.."),
        (lambda: make_sampler("gaussian", 10, seed=-1), "seed must be in 0.."),
        (lambda: make_sampler("pezo-otf", 10, seed=0), "seed must be in 1..16383"),
        (lambda: make_sampler("gaussian", 10).segment(-1, 0, 1), "index must be in 0.."),
        (lambda: make_sampler("gaussian", 10).perturbation(1.0), "index must be an integer"),
        (lambda: make_sampler("uniform", 10).segment(0, 11, 0), "offset must be in 0..10"),
        (lambda: make_sampler("uniform", 10).segment(0, 4, 7), "size must be in 0..6"),
        (lambda: make_sampler("gaussian", 10, pool_size=255), "pool_size is not an option of family 'gaussian'"),
        (lambda: make_sampler("pezo-pregen", 10, n_rngs=31), "n_rngs is not an option of family 'pezo-pregen'"),
        (lambda: make_sampler("pezo-otf", 10, pool_bits=8), "pool_bits is not an option of family 'pezo-otf'"),
        (lambda: make_sampler("pezo-pregen", 10, pool_size=0), "pool_size must be in 1..1048576"),
        (lambda: make_sampler("pezo-pregen", 10, pool_size=2**20 + 1), "pool_size must be in 1..1048576"),
        (lambda: make_sampler("pezo-pregen", 10, pool_bits=3), "pool_bits must be in 4..18"),
        (lambda: make_sampler("pezo-pregen", 1000, pool_size=125), "pool_size must not divide dim=1000"),
        (lambda: make_sampler("pezo-pregen", 1000, pool_size=1), "pool_size must not divide dim=1000"),
        (lambda: make_sampler("pezo-otf", 10, n_rngs=0), "n_rngs must be in 1..1024"),
        (lambda: make_sampler("pezo-otf", 10, n_rngs=300, rng_bits=8), "n_rngs must be in 1..255"),
        (lambda: make_sampler("pezo-otf", 10, rng_bits=2), "rng_bits must be in 3..32"),
        (lambda: make_sampler("pezo-otf", 10, rng_bits=17), "rng_bits must be in 3..16"),
        (lambda: make_sampler("pezo-otf", 10, scaling="log"), "scaling must be one of lut, exact, none"),
        (lambda: make_sampler("pezo-otf", 10, leap=15), r"^leap must be in 1\.\.14, got 15"),
        (lambda: make_sampler("pezo-otf", 10, leap=3), r"^leap must be coprime to 2\^14 - 1 = 16383"),
        (lambda: make_sampler("pezo-otf", 7, n_rngs=1, rng_bits=3), "every perturbation of dim=7"),
        (lambda: make_sampler("naive-int", 10, scaling="none"), "scaling is not an option of family 'naive-int'"),
        (lambda: make_sampler("naive-int", 10, pool_size=255), "pool_size is not an option of family 'naive-int'"),
        (lambda: make_sampler("naive-int", 10, rng_bits=17), "rng_bits must be in 3..16"),
        (lambda: make_sampler("naive-int", 10, seed=0), "seed must be in 1..16383"),
        (lambda: make_sampler("naive-int", 7, n_rngs=1, rng_bits=3), "every perturbation of dim=7"),
    ],
)
def test_bad_input_raises_one_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    "family,options", [("pezo-pregen", {"pool_size": 4096}), ("pezo-otf", {"n_rngs": 32}), ("pezo-otf", {"n_rngs": 2})]
)
def test_power_of_two_sizes_warn(family, options):
    with pytest.warns(PowerOfTwoWarning, match="power of two"):
        sampler = make_sampler(family, 1000, **options)
    assert sampler.perturbation(0).shape == (1000,)


@pytest.mark.parametrize(
    "family,options",
    [
        ("pezo-pregen", {"pool_size": 4095}),
        ("pezo-otf", {"n_rngs": 31}),
        ("pezo-otf", {"n_rngs": 1}),
        ("pezo-pregen", {"pool_size": 3}),
    ],
)
def test_advised_sizes_do_not_warn(family, options):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_sampler(family, 1000 if options.get("pool_size") != 3 else 1001, **options)


def test_families_constant_matches_make_sampler():
    assert families.FAMILIES == ("gaussian", "rademacher", "uniform", "naive-int", "pezo-pregen", "pezo-otf")
    assert [make_sampler(f, 8, **SMALL[f]).family for f in FAMILIES] == list(FAMILIES)
