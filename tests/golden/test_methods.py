"""The seed methods (golden.methods and its modules): contracts, the papers' traps, short real runs."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from pezo.golden.losses import cross_entropy
from pezo.golden.methods.base import METHODS, MethodConfig
from pezo.golden.methods.nets import backward, forward, softmax_grad, weight_name
from pezo.golden.methods.registry import make_method, train_method
from pezo.golden.methods.tasks import load

GOLDEN_TRAINER_KEYS = {
    "family",
    "task",
    "shots",
    "steps",
    "seed",
    "test_accuracy",
    "start_accuracy",
    "seconds_per_step",
    "final_test_accuracy",
    "best_step",
    "best_val_accuracy",
    "start_val_accuracy",
    "val_history",
    "train_loss_start",
    "train_loss_end",
    "trainable",
    "trainable_params",
    "forward_passes",
    "train_size",
    "val_size",
    "test_size",
    "sampler",
    "config",
}


def batches(task, size=32, seed=0):
    rng = np.random.default_rng(seed)

    def next_batch():
        idx = rng.choice(len(task.y_train), size, replace=False)
        return task.x_train[idx], task.y_train[idx]

    return next_batch


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(method="sgd"), "method must be one of"),
        (dict(task="mnist"), "task must be one of"),
        (dict(split=4), "split must be in 0..3"),
        (dict(split="cls3"), "split must be an integer 0..L or one of"),
        (dict(method="sign-m-spsa", queries=0), "m (queries) must be in 1..1024"),
        (dict(weight_bits=3), "weight_bits must be in 4..16"),
        (dict(act_bits=17), "act_bits must be in 2..16"),
        (dict(r_max=64), "r_max must be in 1..63"),
        (dict(b_zo=0), "b_zo must be in 1..7"),
        (dict(p_zero=1.0), "p_zero must be a fraction in [0, 1)"),
        (dict(mu_weight=0), "mu_weight must be in 1..127"),
        (dict(z_scale="exact"), "z_scale must be one of"),
        (dict(family="pezo-otf", family_options=(("pool_size", 4095),)), "does not apply to family"),
        (dict(lr=-1.0), "lr must be a finite number > 0"),
    ],
)
def test_bad_config_is_one_clear_error(config, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        MethodConfig(**config)


def test_split_names_resolve_against_the_depth():
    config = MethodConfig(method="elasticzo", split="cls1")
    assert [MethodConfig(split=s).split_point(3) for s in ("full-zo", "cls2", "cls1", "full-bp")] == [3, 2, 1, 0]
    with pytest.raises(ValueError, match="split must be in 0..1 for a 1-layer net"):
        config.split_point(1)


def test_full_bp_split_is_plain_sgd():
    task = load("digits", 1)
    start = {k: v.copy() for k, v in task.start.items()}
    method = make_method(MethodConfig(method="elasticzo", split="full-bp", bp_lr=0.1), task)
    x, y = task.x_train[:32], task.y_train[:32]
    method.step(0, lambda: (x, y))
    logits, inputs = forward(start, x)
    grads = backward(start, inputs, softmax_grad(logits, y), 0)
    for name, grad in grads.items():
        np.testing.assert_allclose(method.params[name], start[name] - np.float32(0.1) * grad, rtol=1e-6, atol=1e-7)


def test_elasticzo_perturbs_only_the_zo_layers_and_merges_restore_and_update():
    task = load("digits", 1)
    start = {k: v.copy() for k, v in task.start.items()}
    config = MethodConfig(method="elasticzo", split="cls2", lr=1e-3, eps=1e-2)
    method = make_method(config, task)
    seen = []
    x, y = task.x_train[:32], task.y_train[:32]
    real_forward = forward

    def spy(params, xs, first=0):
        seen.append({k: params[k].copy() for k in params})
        return real_forward(params, xs, first)

    import pezo.golden.methods.elasticzo as ez

    ez.forward, saved = spy, ez.forward
    try:
        method.step(0, lambda: (x, y))
    finally:
        ez.forward = saved
    plus, minus = seen
    z = method.sampler.perturbation(0)
    n1 = start["fc1.weight"].size
    np.testing.assert_allclose(plus["fc1.weight"], start["fc1.weight"] + 1e-2 * z[:n1].reshape(32, 64), atol=1e-6)
    np.testing.assert_allclose(minus["fc1.weight"], start["fc1.weight"] - 1e-2 * z[:n1].reshape(32, 64), atol=1e-6)
    np.testing.assert_array_equal(plus["fc3.weight"], start["fc3.weight"])  # the BP layer is never perturbed
    np.testing.assert_array_equal(minus["fc3.weight"], start["fc3.weight"])
    g = np.clip(
        (cross_entropy(real_forward(plus, x)[0], y) - cross_entropy(real_forward(minus, x)[0], y)) / 2e-2, -10, 10
    )
    np.testing.assert_allclose(
        method.params["fc1.weight"], start["fc1.weight"] - 1e-3 * g * z[:n1].reshape(32, 64), atol=2e-6
    )
    assert not np.array_equal(method.params["fc3.weight"], start["fc3.weight"])  # BP updated it


def test_elasticzo_int8_regenerates_z_and_updates_by_at_most_two_lsb():
    task = load("digits", 1)
    method = make_method(MethodConfig(method="elasticzo-int8", split="full-zo", steps=100, r_max=63), task)
    z1, z2 = method.perturbation(7, 0), method.perturbation(7, 0)
    np.testing.assert_array_equal(z1, z2)
    assert z1.min() >= -63 and z1.max() <= 63
    assert abs((z1 == 0).mean() - 0.33) < 0.03  # p_zero = 0.33 before 20 % of the steps
    assert abs((method.perturbation(60, 0) == 0).mean() - 0.9) < 0.03  # 0.9 after 50 %
    method = make_method(MethodConfig(method="elasticzo-int8", split="full-zo", steps=100, r_max=7), task)
    before = [w.copy() for w in method.weights]
    method.step(7, batches(task))
    delta = np.concatenate([(a - b).ravel() for a, b in zip(method.weights, before)])
    inside = np.concatenate([np.abs(b).ravel() <= 127 - 2 * 7 for b in before])
    assert np.abs(delta[inside]).max() <= 2  # b_ZO = 1: 0, 1 or 2 LSB
    assert np.abs(delta[~inside]).max() > 2  # the clamped +z, -2z, +z restore is not exact at the rails (as written)
    assert method.sign_log and method.sign_log[0][0] in (-1, 0, 1)
    assert all(np.abs(w).max() <= 127 for w in method.weights)


def test_poormans_chooses_weight_or_node_perturbation_by_dimension():
    task = load("digits", 1)
    method = make_method(MethodConfig(method="poormans"), task)
    assert method.modes == ["np", "np", "np"]  # d_w = 2048, 1024, 320 > d_a = 32, 32, 10
    wide = load("digits", 1, hidden=(4096,))
    assert make_method(MethodConfig(method="poormans", hidden=(4096,)), wide).modes == ["np", "np"]
    tiny = load("digits", 1, hidden=(2,))
    forced = make_method(MethodConfig(method="poormans", hidden=(2,), perturbation="weight"), tiny)
    assert forced.modes == ["wp", "wp"]
    before = [w.copy() for w in forced.wq]
    stats = forced.step(0, batches(tiny))
    assert stats.forward_passes == 1 + 2 * forced.config.n_queries
    assert all(w.dtype.kind == "i" and np.abs(w).max() <= 127 for w in forced.wq)
    assert any(not np.array_equal(a, b) for a, b in zip(forced.wq, before))


def test_poormans_node_estimate_points_along_the_true_gradient():
    """With many queries the NP estimate of a layer's weight gradient has a positive cosine with BP's."""
    task = load("digits-rot45", 1)
    method = make_method(MethodConfig(method="poormans", queries=64, lr=1e-9), task)
    x, y = task.x_train[:64], task.y_train[:64]
    method._train_layers(0, 1e-9, x, y, [1, 2])
    logits, inputs = forward(task.start, x)
    exact = backward(task.start, inputs, softmax_grad(logits, y), 1)
    for layer in (1, 2):
        est = method.estimates[layer] / method.s_w[layer][:, None]  # W_q units -> real-weight units
        ref = exact[weight_name(layer)]
        cosine = float((est * ref).sum() / np.linalg.norm(est) / np.linalg.norm(ref))
        assert cosine > 0.3, (layer, cosine)


def test_poormans_adaptive_block_selection_trains_one_layer():
    task = load("digits-rot45", 1)
    method = make_method(MethodConfig(method="poormans", block="adaptive", queries=2, batch_size=250), task)
    stats = method.step(0, batches(task, 250))
    assert len(method.chosen) == 1 and set(method.selection["gains"]) == {"0", "1", "2"}
    assert stats.forward_passes > 1 + 2  # the selection epochs are counted


def test_sign_m_spsa_restore_is_exact_and_the_literal_scale_shrinks():
    task = load("digits-rot45", 1)
    method = make_method(MethodConfig(method="sign-m-spsa", lr=1e-12), task)  # F rounds to 0: no update
    before = [w.copy() for w in method.wq]
    method.step(0, batches(task))
    assert all(np.array_equal(a, b) for a, b in zip(method.wq, before))
    assert method.delta_z * method.one_q == 1.0
    with pytest.warns(UserWarning, match="0.99213"):
        literal = make_method(MethodConfig(method="sign-m-spsa", z_scale="literal", lr=1e-12), load("digits-rot45", 1))
    norm = sum(np.abs(w).sum() for w in literal.wq)
    for step in range(3):
        literal.step(step, batches(task))
    assert sum(np.abs(w).sum() for w in literal.wq) < 0.95 * norm  # 0.992^9 per weight


def test_sign_m_spsa_eight_bit_trap_is_one_error():
    with pytest.raises(ValueError, match=r"eps=0.001 rounds to 0 weight LSBs .* weight_bits=8"):
        make_method(MethodConfig(method="sign-m-spsa", weight_bits=8), load("digits-rot45", 1))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("family", [None, "pezo-otf", "pezo-pregen"])
def test_every_method_runs_with_every_perturbation_source(method, family):
    config = MethodConfig(
        method=method,
        task="digits-rot30",
        steps=4,
        eval_every=2,
        family=family,
        queries=2,
        split="cls2" if method.startswith("elasticzo") else "full-zo",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = train_method(config)
    assert GOLDEN_TRAINER_KEYS <= set(summary)
    assert summary["method"] == method and summary["family"] == (family or "native")
    assert summary["memory_bytes"]["total"] > 0 and summary["forward_passes"] > 0
    json.dumps(summary, default=str)


def test_elasticzo_ordering_on_digits():
    """ElasticZO's Table 1 ordering, short runs: Full ZO < Cls1 < Full BP."""
    acc = {
        s: train_method(MethodConfig(method="elasticzo", split=s, steps=800, eval_every=200))["test_accuracy"]
        for s in ("full-zo", "cls1", "full-bp")
    }
    assert acc["full-zo"] < acc["cls1"] < acc["full-bp"]


def test_memory_follows_the_calculators():
    mem = {
        s: train_method(MethodConfig(method="elasticzo", split=s, steps=1))["memory_bytes"]["total"]
        for s in ("full-zo", "cls2", "cls1", "full-bp")
    }
    assert mem["full-zo"] < mem["cls2"] < mem["cls1"] < mem["full-bp"]


def test_int8_zo_sign_agreement_is_recorded():
    summary = train_method(MethodConfig(method="elasticzo-int8", loss_sign="integer", steps=60, eval_every=60))
    agree = summary["method_details"]["sign_agreement"]
    assert 0.5 < agree <= 1.0 and summary["method_details"]["sign_steps"] == 60
