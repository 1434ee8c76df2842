"""Golden INT8 arithmetic (NITI format) and the integer ZO engine model: edges, ties, bad input, replay."""

import numpy as np
import pytest

from pezo.golden.engine import int8
from pezo.golden.engine.zo_engine import (
    ENGINE_FORWARD_LATENCY,
    ENGINE_UPDATE_LATENCY,
    G_MAX,
    G_MIN,
    EngineConfig,
    ZOEngine,
    g_to_fixed,
    perturbed_weights,
    updated_weights,
    weight_decay,
)
from pezo.golden.rng.perturb import PerturbationStream


# -- int8 arithmetic -----------------------------------------------------------------------------
def test_round_shift_rounds_half_up_at_the_ties():
    # x / 4 for x = -10 .. 10: ties (x = +-2, +-6, +-10) go towards +infinity
    x = np.arange(-10, 11)
    assert int8.round_shift(x, 2).tolist() == [np.floor(v / 4 + 0.5) for v in x]
    assert int8.round_shift([-6, -2, 2, 6], 2).tolist() == [-1, 0, 1, 2]
    assert int8.round_shift([-1, 1, -3, 3], 1).tolist() == [0, 1, -1, 2]
    assert int8.round_shift([-7, 0, 7], 0).tolist() == [-7, 0, 7]
    big = (1 << 31) - 1
    assert int8.round_shift([big, -big - 1], 31).tolist() == [1, -1]


@pytest.mark.parametrize("bad", [-1, 32, 2.0, True])
def test_round_shift_rejects_shifts_out_of_range(bad):
    with pytest.raises(ValueError, match="shift must be an integer in 0..31"):
        int8.round_shift([1], bad)


def test_requantize_saturates_symmetrically():
    acc = np.array([127 * 16 + 7, 127 * 16 + 8, -127 * 16 - 8, -127 * 16 - 9, -(1 << 31), (1 << 31) - 1])
    assert int8.requantize(acc, 4).tolist() == [127, 127, -127, -127, -127, 127]
    assert int8.requantize([-128, 128, 0], 0).tolist() == [-127, 127, 0]  # -128 never leaves requantisation


def test_quantize_rounds_half_up_and_keeps_the_full_int8_range_for_activations():
    x = np.array([0.5, 1.5, -0.5, -1.5, 127.49, 127.5, -128.0, -128.6, 300.0]) / 4
    assert int8.quantize(x, -2).tolist() == [1, 2, 0, -1, 127, 127, -128, -128, 127]
    assert int8.quantize([-200], 0, int8.WEIGHT_MIN, int8.WEIGHT_MAX).tolist() == [-127]


def test_exponent_for_maps_the_peak_into_8_bits():
    assert int8.exponent_for([0.3, -0.1]) == -8  # ceil(log2 0.3) - 7
    assert int8.quantize([0.3, -0.1], -8).tolist() == [77, -26]
    assert int8.exponent_for([1.0]) == -7 and int8.exponent_for([-128.0]) == 0
    assert int8.quantize([1.0], -7).tolist() == [127]  # a power-of-two peak is the one value that saturates
    with pytest.raises(ValueError, match="finite non-zero peak"):
        int8.exponent_for([0.0, 0.0])


def test_matmul_is_exact_at_the_extremes_and_rejects_bad_input():
    k = 1000
    x = np.full((2, k), -128)
    w = np.stack([np.full(k, -127), np.full(k, 127)])
    assert int8.matmul(x, w).tolist() == [[128 * 127 * k, -128 * 127 * k]] * 2
    assert int8.MAX_INPUTS * 128 * 127 < 1 << 31 <= (int8.MAX_INPUTS + 1) * 128 * 127
    with pytest.raises(ValueError, match="x entries must be in -128..127"):
        int8.matmul([[128]], [[1]])
    with pytest.raises(ValueError, match="w must be an integer array"):
        int8.matmul([[1]], [[0.5]])
    with pytest.raises(ValueError, match="x has 2 inputs but w has 1"):
        int8.matmul([[1, 2]], [[1]])


# -- the engine configuration -------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields, message",
    [
        ({"cols": 7}, "cols=7 does not tile inputs=384"),
        ({"batch": 12}, "rows=8 does not tile batch=12"),
        ({"rows": 0}, "rows must be in 1..64"),
        ({"cols": 65}, "cols must be in 1..64"),
        ({"inputs": 200_000, "cols": 8}, "inputs must be in 1..132104"),
        ({"outputs": 0}, "outputs must be in 1..64"),
        ({"eps_shift": 25}, "eps_shift must be in 0..24"),
        ({"strategy": "gaussian"}, "strategy must be one of otf, pregen"),
        ({"rng_bits": 20}, "rng_bits must be in 3..16 for the scale LUT"),
        ({"strategy": "pregen", "pool_size": 4}, "pool_size must be in 8..1048576"),
        ({"rows": "8"}, "rows must be an integer"),
    ],
)
def test_engine_config_rejects_bad_fields_with_one_clear_error(fields, message):
    with pytest.raises(ValueError, match=message):
        EngineConfig().replace(**fields)


def test_engine_config_derives_the_stream_and_the_cycle_bound():
    cfg = EngineConfig()
    p = cfg.perturb
    assert (p.n_rngs, p.lanes, p.perturb_dim, p.rewind) == (8, 8, 768, True)
    assert cfg.weight_words == 96 and cfg.array.tiles == 2 and cfg.array.macs == 64
    # 2 * B * |W| / (R * C) + |W| / C + latencies
    assert cfg.cycle_bound() == 2 * 16 * 768 // 64 + 768 // 8 + ENGINE_FORWARD_LATENCY + ENGINE_UPDATE_LATENCY == 496
    assert EngineConfig().replace(cols=6, strategy="pregen").perturb.banks == 2


# -- g and the update ----------------------------------------------------------------------------
def test_g_to_fixed_rounds_half_up_and_saturates():
    assert g_to_fixed(1.0) == 1 << 16
    assert g_to_fixed(0.5 / 65536) == 1 and g_to_fixed(-0.5 / 65536) == 0
    assert g_to_fixed(1e9) == G_MAX and g_to_fixed(-1e9) == G_MIN
    assert g_to_fixed(float("inf")) == G_MAX and g_to_fixed(float("-inf")) == G_MIN
    with pytest.raises(ValueError, match="g must be a number"):
        g_to_fixed(float("nan"))


def test_update_rounds_g_times_p_half_up_and_saturates_the_weights():
    half = 1 << 15  # g = 0.5
    assert updated_weights([0, 0, 0, 0], [1, -1, 3, -3], half).tolist() == [-1, 0, -2, 1]
    assert updated_weights([-127, 127], [1, -1], G_MAX).tolist() == [-127, 127]
    assert updated_weights([100, -100], [-8, 8], 10 << 16).tolist() == [127, -127]
    with pytest.raises(ValueError, match="g must be in"):
        updated_weights([0], [1], G_MAX + 1)


def test_weight_decay_rounds_half_up_has_a_dead_zone_and_checks_its_shift():
    # round_shift(w, s): ties w = +2^(s-1) -> 1, w = -2^(s-1) -> 0; |w| < 2^(s-1) is never decayed
    assert weight_decay([4, -4, 3, -5, 127, -127], 3).tolist() == [1, 0, 0, -1, 16, -16]
    assert weight_decay([127, -127, 64, -64, 63, -65], 7).tolist() == [1, -1, 1, 0, 0, -1]
    assert weight_decay([127, -127, 1], 0).tolist() == [0, 0, 0]  # 0 = off
    assert weight_decay([1, -1, 2, -2], 1).tolist() == [1, 0, 1, -1]
    # the hardware's form ((w >> (s - 1)) + 1) >> 1 is round_shift(w, s) for every int8 weight and shift
    w = np.arange(-127, 128)
    for s in range(1, 8):
        assert np.array_equal(((w >> (s - 1)) + 1) >> 1, weight_decay(w, s))
    for bad in (-1, 8, 1.0, True):
        with pytest.raises(ValueError, match="wd_shift must be"):
            weight_decay([0], bad)


def test_update_with_weight_decay_subtracts_step_and_decay_then_saturates():
    # w - round_shift(g p, 16) - round_shift(w, s)
    assert updated_weights([100, -100, 3, 127], [1, -1, 0, -1], 1 << 16, wd_shift=2).tolist() == [74, -74, 2, 96]
    assert updated_weights([-127, 127], [1, -1], G_MAX, wd_shift=7).tolist() == [-127, 127]
    assert updated_weights([40, -40], [1, 1], 1 << 16, wd_shift=0).tolist() == [39, -41]
    with pytest.raises(ValueError, match="wd_shift must be"):
        updated_weights([0], [1], 1, wd_shift=8)


def test_perturbed_weights_saturate_and_the_minus_pass_mirrors_the_plus_pass():
    w = np.array([120, -120, 0, 5])
    p = np.array([10, -10, 3, -7])
    assert perturbed_weights(w, p).tolist() == [127, -127, 3, -2]
    assert perturbed_weights(w, -p).tolist() == [110, -110, -3, 12]


# -- the engine model ------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["otf", "pregen"])
def test_rewinds_replay_the_perturbation_the_model_draws_once(strategy):
    """The hardware's schedule (NEXT, tile passes with REWINDs, -eps, update) on a golden stream gives
    exactly the model's p and -p, and leaves the stream where the model's does."""
    cfg = EngineConfig().replace(strategy=strategy, rows=2, cols=4, inputs=12, outputs=3, batch=6)
    model, stream = ZOEngine(cfg), PerturbationStream(cfg.perturb)
    for _ in range(4):
        p = model.next_perturbation().ravel()
        for sign in (0, 1):
            for tile in range(cfg.array.tiles):
                stream.step(next=sign == 0 and tile == 0, rewind=not (sign == 0 and tile == 0), sign=bool(sign))
                assert np.array_equal(stream.perturbation(cfg.weights), -p if sign else p)
        stream.step(rewind=True, sign=False)
        assert np.array_equal(stream.perturbation(cfg.weights), p)


def test_forward_zo_never_writes_the_weights_and_update_replays_p():
    cfg = EngineConfig().replace(rows=2, cols=4, inputs=8, outputs=2, batch=4)
    rng = np.random.default_rng(3)
    w0 = rng.integers(-127, 128, (2, 8))
    x = rng.integers(-128, 128, (4, 8))
    engine = ZOEngine(cfg, w0)
    plus, minus = engine.forward_zo(x)
    p = engine.perturbation
    assert np.array_equal(engine.weights, w0)
    assert np.array_equal(plus, int8.matmul(x, perturbed_weights(w0, p)))
    assert np.array_equal(minus, int8.matmul(x, perturbed_weights(w0, -p)))
    engine.update(3 << 14)
    assert np.array_equal(engine.weights, updated_weights(w0, p, 3 << 14))
    assert np.array_equal(engine.infer(x), int8.matmul(x, engine.weights))


def test_engine_model_rejects_bad_shapes_and_an_update_before_any_step():
    engine = ZOEngine(EngineConfig().replace(rows=1, cols=1, inputs=2, outputs=1, batch=1))
    with pytest.raises(RuntimeError, match="update before the first forward_zo"):
        engine.update(0)
    with pytest.raises(ValueError, match=r"x must have shape \(1, 2\)"):
        engine.forward_zo([[1, 2, 3]])
    with pytest.raises(ValueError, match="weights entries must be in -127..127"):
        engine.load_weights([[-128, 0]])
