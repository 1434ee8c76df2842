"""MeZO optimiser: the estimator, the update rule, both perturbation modes and bit-exact replay."""

import numpy as np
import pytest

from pezo.golden.zo.families import make_sampler
from pezo.golden.zo.mezo import MeZO, MeZOConfig, StepRecord, TrainableLayout, no_decay


def quadratic_problem(seed=0):
    rng = np.random.default_rng(seed)
    params = {
        "a.weight": rng.standard_normal((6, 5)).astype(np.float32),
        "a.bias": rng.standard_normal(6).astype(np.float32),
        "frozen": rng.standard_normal(3).astype(np.float32),
        "b.LayerNorm.weight": rng.standard_normal(4).astype(np.float32),
    }
    target = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}

    def loss(p):
        return float(
            sum(
                np.sum((p[k].astype(np.float64) - target[k]) ** 2) for k in ("a.weight", "a.bias", "b.LayerNorm.weight")
            )
        )

    return params, loss


NAMES = ["a.weight", "a.bias", "b.LayerNorm.weight"]


@pytest.mark.parametrize("family", ["gaussian", "rademacher", "pezo-pregen", "pezo-otf"])
@pytest.mark.parametrize("mode", ["inplace", "stream"])
def test_mezo_descends_and_replays_bit_for_bit(family, mode):
    params, loss = quadratic_problem()
    start = {k: v.copy() for k, v in params.items()}
    d = TrainableLayout.of(params, NAMES).dim
    options = (
        {"pool_size": 31} if family == "pezo-pregen" else {"n_rngs": 7, "rng_bits": 10} if family == "pezo-otf" else {}
    )
    sampler = make_sampler(family, d, seed=3, **options)
    opt = MeZO(params, NAMES, sampler, MeZOConfig(lr=2e-3, eps=1e-3, queries=2, weight_decay=0.01, mode=mode))
    first = loss(params)
    records = [opt.step(t, loss) for t in range(300)]
    assert loss(params) < 0.5 * first
    assert np.array_equal(params["frozen"], start["frozen"])
    replayed = {k: v.copy() for k, v in start.items()}
    MeZO(replayed, NAMES, sampler, opt.config).replay(records)
    for name in params:
        assert np.array_equal(replayed[name], params[name]), name


def test_projected_gradient_is_the_central_difference():
    params, loss = quadratic_problem()
    d = TrainableLayout.of(params, NAMES).dim
    sampler = make_sampler("gaussian", d, seed=1)
    opt = MeZO(params, NAMES, sampler, MeZOConfig(lr=1e-9, eps=1e-2, mode="stream"))
    z = {
        n: sampler.segment(7, opt.layout.offsets[i], opt.layout.size(i)).reshape(opt.layout.shapes[i])
        for i, n in enumerate(NAMES)
    }
    plus = {k: (v + np.float32(1e-2) * z[k] if k in z else v) for k, v in params.items()}
    minus = {k: (v - np.float32(1e-2) * z[k] if k in z else v) for k, v in params.items()}
    record = opt.step(7, loss)
    assert record.indices == (7,)
    assert record.projected_grads[0] == pytest.approx((loss(plus) - loss(minus)) / 2e-2, rel=1e-6)


def test_update_rule_matches_mezo_with_weight_decay_skipped_for_bias_and_layernorm():
    params, _ = quadratic_problem()
    start = {k: v.copy() for k, v in params.items()}
    d = TrainableLayout.of(params, NAMES).dim
    sampler = make_sampler("gaussian", d, seed=1)
    cfg = MeZOConfig(lr=0.1, eps=1e-3, weight_decay=0.5)
    opt = MeZO(params, NAMES, sampler, cfg)
    opt.update(StepRecord(0, (4,), (2.0,), 0.0))
    for i, name in enumerate(NAMES):
        z = sampler.segment(4, opt.layout.offsets[i], opt.layout.size(i)).reshape(opt.layout.shapes[i])
        decay = 0.0 if no_decay(name) else 0.5
        expect = start[name] - np.float32(0.1) * (z * np.float32(2.0) + np.float32(decay) * start[name])
        np.testing.assert_allclose(params[name], expect, rtol=1e-6, atol=1e-7)
    assert no_decay("a.bias") and no_decay("b.LayerNorm.weight") and not no_decay("a.weight")


def test_inplace_mode_restores_weights_up_to_float32_rounding():
    params, loss = quadratic_problem()
    start = {k: v.copy() for k, v in params.items()}
    d = TrainableLayout.of(params, NAMES).dim
    opt = MeZO(params, NAMES, make_sampler("gaussian", d, seed=1), MeZOConfig(eps=1e-3))
    opt.losses(5, loss)
    for name in NAMES:
        np.testing.assert_allclose(params[name], start[name], atol=1e-6)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("lr", 0.0, "lr"),
        ("eps", -1e-3, "eps"),
        ("eps", float("nan"), "eps"),
        ("queries", 0, "queries"),
        ("weight_decay", -1.0, "weight_decay"),
        ("mode", "copy", "mode"),
    ],
)
def test_config_errors_name_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        MeZOConfig(**{field: value})


def test_layout_and_sampler_errors():
    params, _ = quadratic_problem()
    with pytest.raises(ValueError, match="unknown"):
        TrainableLayout.of(params, ["nope"])
    with pytest.raises(ValueError, match="dim"):
        MeZO(params, NAMES, make_sampler("gaussian", 5), MeZOConfig())
    with pytest.raises(ValueError, match="step"):
        MeZO(params, NAMES, make_sampler("gaussian", 40), MeZOConfig()).step(-1, lambda p: 0.0)
