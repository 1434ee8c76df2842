"""The golden LM's compiled kernels (golden/lm/jit_kernels.py) give minilm's NumPy passes bit for bit, special
values included; PEZO_NO_NUMBA=1 forces the NumPy passes (the erf and GELU kernels: test_erf32.py; the whole
forward pass: test_minilm.py)."""

from __future__ import annotations

import numpy as np
import pytest

from pezo.golden.lm import jit, minilm

KERNELS = jit.kernels()
pytestmark = pytest.mark.skipif(KERNELS is None, reason=f"compiled kernels unavailable: {jit.status()}")
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan]


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype and np.array_equal(got.view(np.uint32), want.view(np.uint32))


def numpy_passes(function, *args):
    with jit.numpy_only():
        return function(*args)


def sample(rng, shape, specials: int = 3) -> np.ndarray:
    spread = 10 ** rng.uniform(-3, 3, shape[:-1] + (1,))
    x = (rng.standard_normal(shape) * spread + rng.uniform(-5, 5, shape[:-1] + (1,))).astype(np.float32)
    x.reshape(-1)[rng.integers(0, x.size, specials)] = rng.choice(SPECIALS, specials)
    return x


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("shape", [(768, 384), (2, 48, 384), (100, 7), (50, 130), (3, 1000), (4, 1), (1, 100_003)])
def test_layer_norm_and_its_residual_form_are_the_numpy_passes(shape):
    rng = np.random.default_rng(2)
    x, residual = sample(rng, shape, specials=0), sample(rng, shape, specials=0)
    weight, bias = rng.standard_normal((2, shape[-1])).astype(np.float32)
    assert same_bits(minilm.layer_norm(x, weight, bias, 1e-12), numpy_passes(minilm.layer_norm, x, weight, bias, 1e-12))
    inputs = min(16, shape[-1])
    x2, residual2 = x.reshape(-1, shape[-1])[:, :inputs], residual.reshape(-1, shape[-1])
    linear = ((rng.standard_normal((shape[-1], inputs)) / 4).astype(np.float32), bias[::-1].copy())
    args = (x2, *linear, residual2, weight, bias, 1e-12)
    assert same_bits(minilm._linear_add_layer_norm(*args), numpy_passes(minilm._linear_add_layer_norm, *args))
    with_specials = sample(rng, (5, shape[-1]))  # NaN / inf rows: NaN out, as NumPy
    want = numpy_passes(minilm.layer_norm, with_specials, weight, bias, 1e-12)
    assert same_bits(minilm.layer_norm(with_specials, weight, bias, 1e-12), want)


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("mask_dtype", [np.float32, np.float64])
def test_attention_softmax_is_the_numpy_passes(mask_dtype):
    rng = np.random.default_rng(1)
    for _ in range(20):
        b, h, t = rng.integers(1, 5, size=3) * np.array([1, 1, 9])
        scores = sample(rng, (b, h, t, t))
        mask = (rng.random((b, t)) < 0.7).astype(mask_dtype)
        want = numpy_passes(minilm._softmax, scores.copy(), mask)
        assert same_bits(minilm._softmax(scores.copy(), mask), want)


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("shape", [(768, 1536), (5, 1000), (3, 7), (1, 256), (2, 257)])
@pytest.mark.parametrize("threads", [1, 3])
def test_bias_add_and_gelu_are_the_numpy_passes(shape, threads, monkeypatch):
    monkeypatch.setattr(minilm, "blas_threads", lambda: threads)
    monkeypatch.setattr(minilm, "PARALLEL_MIN_VALUES", 1)
    rng = np.random.default_rng(4)
    x = sample(rng, (shape[0], 16), specials=0)
    weight = (rng.standard_normal((shape[1], 16)) / 4).astype(np.float32)
    bias = sample(rng, (shape[1],), specials=min(3, shape[1]))
    want = numpy_passes(minilm._linear_gelu, x, weight, bias)
    assert same_bits(minilm._linear_gelu(x, weight, bias), want)


def test_weights_of_another_dtype_take_the_numpy_passes():
    rng = np.random.default_rng(5)
    x, residual = sample(rng, (6, 40), specials=0), sample(rng, (6, 40), specials=0)
    weight, bias = rng.standard_normal((2, 40))  # float64: NumPy rounds after each in-place operation
    assert same_bits(minilm.layer_norm(x, weight, bias, 1e-12), numpy_passes(minilm.layer_norm, x, weight, bias, 1e-12))
    w32 = (rng.standard_normal((40, 40)) / 4).astype(np.float32)
    args = (x, w32, bias, residual, weight, bias, 1e-12)
    assert same_bits(minilm._linear_add_layer_norm(*args), numpy_passes(minilm._linear_add_layer_norm, *args))
    assert same_bits(minilm._linear_gelu(x, w32, bias), numpy_passes(minilm._linear_gelu, x, w32, bias))
