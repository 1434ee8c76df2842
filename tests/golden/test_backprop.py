"""The elastic trainer's backprop tail (``golden.engine.backprop``): the hinge subgradient against finite
differences of the loss, the backward against NITI's own FC backward (``golden.methods.niti``) and against
plain integer matrix products, and how a split divides one engine step between ZO and backprop."""

import numpy as np
import pytest

from pezo.golden.engine.backprop import split_name, split_point, tail_backward
from pezo.golden.engine.int8 import pseudo_stochastic_round, requantize_tensor
from pezo.golden.engine.loss import LossConfig, hinge_error, hinge_loss
from pezo.golden.engine.network import Layer, NetConfig, NetEngine, forward_pass
from pezo.golden.engine.zo_engine import updated_weights
from pezo.golden.methods.niti import fc_backward_int8


def test_the_logit_error_is_the_hinge_subgradient():
    rng = np.random.default_rng(5)
    z = rng.permutation(1000)[:60].reshape(6, 10) * 7  # distinct logits: no ties, no kinks within one LSB
    y = rng.integers(0, 10, 6)
    for margin in (0, 30, 400):
        e = hinge_error(z, y, margin)
        for b in range(6):
            for j in range(10):
                bumped = z.copy()
                bumped[b, j] += 1
                assert hinge_loss(bumped, y, margin) - hinge_loss(z, y, margin) == e[b, j]
    assert set(np.unique(hinge_error(z, y, 400))) <= {-1, 0, 1}


def test_ties_blame_the_lowest_wrong_class_and_satisfied_examples_are_zero():
    z = np.array([[4, 9, 9, 0], [50, 1, 1, 1]])
    assert hinge_error(z, np.array([3, 0]), 10).tolist() == [[0, 1, 0, -1], [0, 0, 0, 0]]


def test_split_names_and_indices():
    assert [split_point(s, 3) for s in ("full-zo", "cls2", "cls1", "full-bp", 2, "1")] == [3, 2, 1, 0, 2, 1]
    assert [split_name(c, 3) for c in range(4)] == ["full-bp", "cls1", "cls2", "full-zo"]
    assert split_name(1, 5) == "C=1"
    for bad, message in ((4, "0..3, got 4"), (-1, "got -1"), ("cls3", "got 'cls3'"), (True, "got True")):
        with pytest.raises(ValueError, match=message):
            split_point(bad, 3)
    with pytest.raises(ValueError, match="needs at least 2 layers"):
        split_point("cls1", 1)


def _net(relu: bool):
    layers = (Layer(8, 8, shift=6, relu=relu), Layer(8, 8, shift=5, relu=relu), Layer(8, 4))
    return NetConfig().replace(layers=layers, rows=2, cols=4, batch=4)


def _weights(cfg, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(-127, 128, (l.outputs, l.inputs)) for l in cfg.layers]


@pytest.mark.parametrize("bits", [1, 3, 7])
def test_without_relu_the_tail_is_nitis_fc_backward_layer_after_layer(bits):
    cfg = _net(relu=False)
    ws = _weights(cfg, 1)
    x = np.random.default_rng(2).integers(-128, 128, (4, 8))
    logits, inputs = forward_pass(cfg, x, ws, [np.zeros(l.outputs, dtype=np.int64) for l in cfg.layers])
    y = np.array([0, 1, 2, 3])
    e = hinge_error(logits, y, 1 << 12)
    new, record = tail_backward(cfg.layers, ws, inputs, e, 0, bits)
    err = e
    for l in (2, 1, 0):
        err_in, _, grad = fc_backward_int8(err, 0, ws[l], inputs[l], bits)
        assert np.array_equal(record.errors[l], err)
        assert np.array_equal(record.updates[l], grad)
        assert np.array_equal(new[l], np.clip(ws[l] - grad, -127, 127))
        err = err_in


def test_the_relu_masks_the_error_before_its_requantisation_and_the_split_stops_the_tail():
    cfg = _net(relu=True)
    ws = _weights(cfg, 3)
    x = np.random.default_rng(4).integers(-128, 128, (4, 8))
    logits, inputs = forward_pass(cfg, x, ws, [np.zeros(l.outputs, dtype=np.int64) for l in cfg.layers])
    e = hinge_error(logits, np.array([3, 2, 1, 0]), 1 << 14)
    new, record = tail_backward(cfg.layers, ws, inputs, e, 1, 4)
    assert record.errors[0] is None and record.gradients[0] is None and new[0] is ws[0]
    assert np.array_equal(record.gradients[2], e.T @ inputs[2])
    masked = np.where(inputs[2] > 0, e @ ws[2], 0)
    assert np.array_equal(record.errors[1], requantize_tensor(masked, 0)[0])
    assert np.array_equal(record.gradients[1], record.errors[1].T @ inputs[1])
    assert np.array_equal(new[1], np.clip(ws[1] - pseudo_stochastic_round(record.gradients[1], 4), -127, 127))


def _engine(seed=7):
    cfg = _net(relu=True)
    return NetEngine(cfg, _weights(cfg, seed))


def test_a_hybrid_step_zo_updates_the_head_layers_and_backprop_the_tail():
    rng = np.random.default_rng(8)
    x, y = rng.integers(-128, 128, (4, 8)), np.array([0, 1, 2, 3])
    loss = LossConfig(margin=1 << 12, g_lr=1 << 16, split=2, bp_bits=3)
    full = _engine()
    p_full = full.next_perturbation().copy()
    hybrid = _engine()
    w0 = [w.copy() for w in hybrid.weights]
    record = hybrid.train_step(x, y, loss)
    zo_end = 8 * 8 + 8 * 8
    assert np.array_equal(hybrid.perturbation[:zo_end], p_full[:zo_end])  # the same stream as full ZO
    assert not hybrid.perturbation[zo_end:].any()  # the tail is never perturbed
    p = p_full[:zo_end]
    flat0 = np.concatenate([w.ravel() for w in w0])
    assert np.array_equal(hybrid.flat[:zo_end], updated_weights(flat0[:zo_end], p, record.g))
    # the tail: the minus pass (layers 1..C perturbed by -p), its logits' hinge subgradient, W before the update
    minus_w = [
        np.clip(w0[0] - p[:64].reshape(8, 8), -127, 127),
        np.clip(w0[1] - p[64:].reshape(8, 8), -127, 127),
        w0[2],
    ]
    logits, inputs = forward_pass(hybrid.config, x, minus_w, hybrid.biases)
    assert np.array_equal(record.logits_minus, logits)
    want, _ = tail_backward(hybrid.config.layers, minus_w, inputs, hinge_error(logits, y, loss.margin), 2, 3)
    assert np.array_equal(hybrid.weights[2], want[2])
    assert record.split == 2 and record.tail.gradients[2] is not None and record.tail.gradients[1] is None


def test_full_bp_is_one_plain_pass_without_the_stream_or_the_decay_counter():
    rng = np.random.default_rng(9)
    x, y = rng.integers(-128, 128, (4, 8)), np.array([3, 1, 2, 0])
    engine = _engine()
    w0 = [w.copy() for w in engine.weights]
    record = engine.train_step(x, y, LossConfig(margin=1 << 12, split=0, bp_bits=2, wd_shift=3))
    assert engine.steps == 0 and engine.decay_count == 0 and engine.perturbation is None
    assert record.logits_plus is None and record.g == 0 and record.loss_plus == 0
    assert np.array_equal(record.logits_minus, engine._logits(x, np.concatenate([w.ravel() for w in w0])))
    logits, inputs = forward_pass(engine.config, x, w0, engine.biases)
    want, _ = tail_backward(engine.config.layers, w0, inputs, hinge_error(logits, y, 1 << 12), 0, 2)
    assert all(np.array_equal(a, b) for a, b in zip(engine.weights, want))


def test_split_none_and_split_l_are_the_zo_step_unchanged():
    rng = np.random.default_rng(10)
    x, y = rng.integers(-128, 128, (4, 8)), np.array([0, 0, 1, 1])
    a, b = _engine(), _engine()
    ra = a.train_step(x, y, LossConfig(margin=4096))
    rb = b.train_step(x, y, LossConfig(margin=4096, split=3))
    assert a.digest() == b.digest() and ra.g == rb.g and rb.tail is None and rb.split is None


def test_a_split_beyond_the_net_is_one_clear_error():
    engine = _engine()
    x = np.zeros((4, 8), dtype=np.int64)
    with pytest.raises(ValueError, match=r"split must be one of .* 0\.\.3, got 4"):
        engine.train_step(x, np.zeros(4, dtype=np.int64), LossConfig(split=4))
    with pytest.raises(ValueError, match="bp_bits must be in 1..7"):
        LossConfig(split=1, bp_bits=8)
