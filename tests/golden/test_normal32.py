"""MeZO's compiled float32 normal draw (golden/zo/normal32.py) is NumPy's ``standard_normal(dtype=float32)`` bit for
bit, and leaves the PCG64 generator in NumPy's state; the Gaussian sampler gives the same z either way."""

from __future__ import annotations

import numpy as np
import pytest

from pezo.golden.lm import jit
from pezo.golden.zo import normal32
from pezo.golden.zo.families import GaussianSampler

pytestmark = pytest.mark.skipif(not normal32.compiled(), reason=f"the compiled normal draw is off: {normal32.status()}")
R_TAIL = 3.6541529  # the ziggurat's base-layer edge r: values beyond it come from the tail path


def pcg(*key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(key))))


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_twelve_million_values_match_numpy_past_where_numbas_own_draw_loses_step():
    """numba's ``standard_normal(dtype=float32)`` computes the wedge test's exp in float32 and differs from value
    10 120 771 of this key on; the kernel's double exp does not. Both rare paths (the base tail beyond r, wedges)
    are taken many times in 12 M values."""
    count = 12_000_000
    got = normal32.standard_normal_f32(pcg(1, 2, 3), np.empty(count, np.float32))
    want = pcg(1, 2, 3).standard_normal(count, dtype=np.float32)
    assert same_bits(got, want)
    assert np.count_nonzero(np.abs(got) > R_TAIL) > 1000  # the tail path ran


@pytest.mark.parametrize("pieces", [[4096], [5000, 4097, 10_001], [4099, 100, 7, 65_536], [1, 4096, 3, 8191]])
def test_piece_by_piece_draws_and_every_later_draw_continue_numpys_stream(pieces):
    """Odd counts leave half of a 64-bit output buffered (``has_uint32``); small pieces take NumPy's own call.
    After the pieces, the integers, uniforms and normals each generator gives next are the same too."""
    for seed in range(6):
        ours, numpys = pcg(seed, 11, len(pieces)), pcg(seed, 11, len(pieces))
        for count in pieces:
            got = normal32.standard_normal_f32(ours, np.empty(count, np.float32))
            assert same_bits(got, numpys.standard_normal(count, dtype=np.float32)), (seed, count)
        assert ours.bit_generator.state == numpys.bit_generator.state
        assert ours.integers(1 << 62, size=3).tolist() == numpys.integers(1 << 62, size=3).tolist()
        assert ours.random() == numpys.random()


def test_arrays_it_cannot_fill_and_other_bit_generators_take_numpys_call():
    strided = np.zeros(2 * 8192, np.float32)[::2]
    with pytest.raises(ValueError, match="contiguous"):  # NumPy's own error, as without the kernel
        normal32.standard_normal_f32(pcg(5), strided)
    philox = np.random.Generator(np.random.Philox(3))
    got = normal32.standard_normal_f32(philox, np.empty(8192, np.float32))
    assert same_bits(got, np.random.Generator(np.random.Philox(3)).standard_normal(8192, dtype=np.float32))


def test_switched_off_it_is_numpys_draw(monkeypatch):
    monkeypatch.setenv(jit.ENV_DISABLE, "1")
    assert not normal32.compiled()
    assert normal32.status() == f"numpy (off ({jit.ENV_DISABLE}=1))"
    with jit.numpy_only():
        monkeypatch.delenv(jit.ENV_DISABLE)
        assert not normal32.compiled()
        assert normal32.status() == "numpy (off (numpy_only))"
    with normal32.numpy_draw():
        assert not normal32.compiled() and normal32.status() == "numpy (numpy_draw)"
    assert normal32.compiled() and normal32.status() == "compiled (numba)"


@pytest.mark.parametrize("size", [10, 70_000])
def test_the_gaussian_sampler_gives_numpys_z_with_and_without_the_kernel(size):
    sampler = GaussianSampler(dim=3 * size, seed=9)
    with jit.numpy_only():
        segment = sampler.segment(4, size, size)
        stream = np.empty(size, np.float32)
        sampler.stream(4, size, size).read(stream)
    assert same_bits(sampler.segment(4, size, size), segment)
    pieces = sampler.stream(4, size, size)
    got = np.concatenate([pieces.read(np.empty(n, np.float32)) for n in (size // 2, size - size // 2)])
    assert same_bits(got, stream) and same_bits(stream, segment)
    assert same_bits(segment, pcg(9, 4, size).standard_normal(size, dtype=np.float32))


def test_the_kernel_releases_the_gil_for_mezos_threads():
    """MeZO's threads draw their tensors' z at once (``golden.zo.mezo``), as NumPy's call lets them."""
    from pezo.golden.zo import normal32_kernel

    assert normal32_kernel.fill.targetoptions.get("nogil") is True
