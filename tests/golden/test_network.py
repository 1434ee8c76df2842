"""The network engine's golden model: the layer program's arithmetic against a plain reference, the on-chip
hinge loss and g by hand, the global weight/stream order, and one clear error per bad network."""

import numpy as np
import pytest

from pezo.golden.engine.int8 import round_shift
from pezo.golden.engine.loss import G_MODE_CODES, LossConfig, hinge_loss, hinge_terms, onchip_g
from pezo.golden.engine.nets import NET_NAMES, net_config
from pezo.golden.engine.network import (
    LAYER_GAP,
    NET_FORWARD_LATENCY,
    NET_UPDATE_LATENCY,
    Layer,
    NetConfig,
    NetEngine,
)
from pezo.golden.engine.zo_engine import (
    FORWARD_LATENCY,
    G_MAX,
    G_MIN,
    OPERAND_STAGES,
    PRODUCT_STAGES,
    WEIGHT_STAGES,
    EngineConfig,
    ZOEngine,
    updated_weights,
)


def test_hinge_loss_by_hand():
    logits = np.array([[5, 1, 3], [0, 9, 2], [4, 4, 4]])
    labels = np.array([0, 2, 1])
    # row 0: max other 3, label 5 -> max(0, m + 3 - 5); row 1: max other 9, label 2; row 2: tie
    assert list(hinge_terms(logits, labels, 1)) == [0, 8, 1]
    assert list(hinge_terms(logits, labels, 4)) == [2, 11, 4]
    assert hinge_loss(logits, labels, 4) == 17


def test_g_modes_by_hand():
    sign = LossConfig(mode="sign", g_lr=1000)
    assert (onchip_g(10, 3, sign), onchip_g(3, 10, sign), onchip_g(5, 5, sign)) == (1000, -1000, 0)
    scaled = LossConfig(mode="scaled", g_shift=2)
    assert [onchip_g(d, 0, scaled) for d in (6, -6, 5, -5, 2, -2)] == [2, -1, 1, -1, 1, 0]  # round half up
    assert onchip_g(1 << 40, 0, LossConfig(mode="scaled", g_shift=0)) == G_MAX
    assert onchip_g(0, 1 << 40, LossConfig(mode="scaled", g_shift=0)) == G_MIN
    assert onchip_g(7, 1, LossConfig(mode="host")) == 0
    assert set(G_MODE_CODES) == {"host", "sign", "scaled"}


def test_the_layer_program_is_the_documented_arithmetic():
    cfg = NetConfig().replace(
        layers=(Layer(8, 4, shift=5, relu=True, bias=True), Layer(4, 4, shift=3), Layer(4, 3)), rows=2, cols=4, batch=4
    )
    rng = np.random.default_rng(3)
    ws = [rng.integers(-127, 128, (l.outputs, l.inputs)) for l in cfg.layers]
    b0 = rng.integers(-3000, 3000, 4)
    engine = NetEngine(cfg, ws, [b0, None, None])
    x = rng.integers(-128, 128, (4, 8))
    h1 = np.clip(round_shift(x @ ws[0].T + b0, 5), 0, 127)  # ReLU: [0, 127]
    h2 = np.clip(round_shift(h1 @ ws[1].T, 3), -127, 127)  # no ReLU: [-127, 127]
    assert np.array_equal(engine.infer(x), h2 @ ws[2].T)


def test_one_step_perturbs_every_layer_in_global_order_and_updates_by_replay():
    cfg = NetConfig().replace(layers=(Layer(8, 4, shift=4, relu=True), Layer(4, 2)), rows=1, cols=4, batch=2)
    rng = np.random.default_rng(4)
    engine = NetEngine(cfg, [rng.integers(-60, 61, (4, 8)), rng.integers(-60, 61, (2, 4))])
    w0 = engine.flat.copy()
    x, y = rng.integers(-128, 128, (2, 8)), np.array([0, 1])
    record = engine.train_step(x, y, LossConfig(mode="sign", margin=10, g_lr=1 << 16))
    p = engine.perturbation
    assert p.shape == (cfg.weights,) and np.count_nonzero(p) > cfg.weights // 2
    plus = NetEngine(cfg, np.clip(w0 + p, -127, 127))
    minus = NetEngine(cfg, np.clip(w0 - p, -127, 127))
    assert np.array_equal(record.logits_plus, plus.infer(x)) and np.array_equal(record.logits_minus, minus.infer(x))
    assert record.loss_plus == hinge_loss(record.logits_plus, y, 10)
    assert record.g == np.sign(record.loss_plus - record.loss_minus) * (1 << 16)
    assert np.array_equal(engine.flat, np.clip(w0 - np.sign(record.g) * p, -127, 127))


def test_the_decay_counter_picks_every_wd_every_th_update_across_operations():
    """The engine's decay counter (module docstring): from reset, updates wd_every, 2 wd_every, ... decay;
    it counts OP_UPDATE and TRAIN updates alike, with or without wd_shift, and a smaller wd_every than the
    count so far decays at once."""
    cfg = NetConfig().replace(layers=(Layer(8, 4, shift=4, relu=True), Layer(4, 2)), rows=1, cols=4, batch=2)
    rng = np.random.default_rng(5)
    engine = NetEngine(cfg, [rng.integers(-100, 101, (4, 8)), rng.integers(-100, 101, (2, 4))])
    x, y = rng.integers(-128, 128, (2, 8)), np.array([0, 1])
    picked = []
    for step in range(7):
        picked.append(engine.decays_next(3))
        before = engine.flat.copy()
        if step == 1:  # a host-g update counts as well
            engine.forward_zo(x)
            engine.update(1 << 16, 4, 3)
            expect = updated_weights(before, engine.perturbation, 1 << 16, 0)
        else:
            record = engine.train_step(x, y, LossConfig(mode="sign", margin=10, g_lr=1 << 16, wd_shift=4, wd_every=3))
            expect = updated_weights(before, engine.perturbation, record.g, 4 if picked[-1] else 0)
        assert np.array_equal(engine.flat, expect), step
    assert picked == [False, False, True, False, False, True, False]
    assert engine.decay_count == 1
    engine.forward_zo(x)
    engine.update(0, 0, 1)  # wd_every 1 >= count + 1: decays (a no-op with wd_shift 0) and restarts the count
    assert engine.decay_count == 0 and engine.decays_next(1) and not engine.decays_next(2)
    with pytest.raises(ValueError, match="wd_every must be in 1..255, got 0"):
        engine.update(0, 0, 0)
    with pytest.raises(ValueError, match="wd_every must be in 1..255, got 256"):
        LossConfig(wd_every=256)


def test_a_one_layer_network_is_the_head_engine():
    """rt-head on the network engine: the same perturbations and logits as the head engine of the same shape."""
    net = NetConfig().replace(layers=(Layer(16, 2),), rows=2, cols=4, batch=4)
    head = EngineConfig().replace(rows=2, cols=4, inputs=16, outputs=2, batch=4)
    rng = np.random.default_rng(6)
    w = rng.integers(-127, 128, (2, 16))
    x = rng.integers(-128, 128, (4, 16))
    a, b = NetEngine(net, [w]), ZOEngine(head, w)
    for _ in range(3):
        (pa, ma), (pb, mb) = a.forward_zo(x), b.forward_zo(x)
        assert np.array_equal(pa, pb) and np.array_equal(ma, mb)
        a.update(9000)
        b.update(9000)
    assert np.array_equal(a.weights[0], b.weights)


def test_presets_tile_the_default_array_and_the_bound():
    for name in NET_NAMES:
        cfg = net_config(name)
        assert cfg.name == name and cfg.weights % cfg.array.cols == 0
        words = cfg.weights // cfg.array.cols
        issued = sum(cfg.layer_cycles(i) for i in range(len(cfg.layers)))  # a conv's words once per pixel (issue 33)
        assert issued == words or cfg.has_conv
        assert cfg.cycle_bound() == 2 * cfg.array.tiles * issued + words + NET_FORWARD_LATENCY + NET_UPDATE_LATENCY
    assert NET_FORWARD_LATENCY == FORWARD_LATENCY + PRODUCT_STAGES - 1 + WEIGHT_STAGES + OPERAND_STAGES
    # the gap grows with the products registers, not with the operand stages (the reads move with them)
    assert LAYER_GAP == FORWARD_LATENCY + PRODUCT_STAGES - 1 + 2
    digits = net_config("digits-mlp")
    # 2129 before issue 32's split g * p (NET_UPDATE_LATENCY 4) and operand register (NET_FORWARD_LATENCY 7);
    # 2131 before the products took p from its second register (NET_UPDATE_LATENCY 5), 2132 before the written
    # word had a register of its own (6), 2133 before the clamp of w + p had a register of its own (OPERAND_STAGES 2),
    # 2134 before the second products register (PRODUCT_STAGES 2), 2135 before the update's clamp had a register of
    # its own (NET_UPDATE_LATENCY 7)
    assert digits.weights == 64 * 32 + 32 * 32 + 32 * 10 and digits.cycle_bound() == 2136
    util = digits.layer_utilisation()
    assert [u["words_per_tile"] for u in util] == [256, 128, 40]
    assert util[0]["mac_utilisation"] == round(256 / (256 + LAYER_GAP), 4) and util[-1]["mac_utilisation"] == 1


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(layers=(Layer(60, 32), Layer(32, 10))), "layer 0 (60 -> 32) does not tile the array"),
        (
            dict(layers=(Layer(64, 32), Layer(30, 10))),
            "layer 1 (30 -> 10) takes 30 inputs but layer 0 (64 -> 32) has 32",
        ),
        (dict(layers=(Layer(64, 30, relu=True), Layer(30, 10))), "layer 1 (30 -> 10) does not tile the array"),
        (dict(layers=()), "layers must be in 1..8"),
        (dict(layers=(Layer(8, 8),) * 9), "layers must be in 1..8"),
        (dict(layers=(Layer(64, 10, relu=True),)), "gives the logits: it has no ReLU"),
        (dict(layers=(Layer(64, 1),)), "needs at least 2 outputs"),
        (
            dict(layers=(Layer(64, 10),), weight_depth=79),
            "weight_depth=79 words is too small for the network: it needs 80",
        ),
        (dict(batch=12), "rows=8 does not tile batch=12"),
        (dict(batch=0), "batch must be in 1..4096"),
        (dict(strategy="gaussian"), "strategy must be one of otf, pregen"),
    ],
)
def test_bad_networks_get_one_clear_error(fields, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        NetConfig().replace(**fields)


def test_bad_layers_and_registers_get_one_clear_error():
    with pytest.raises(ValueError, match="outputs must be in 1..4096"):
        Layer(8, 5000)
    with pytest.raises(ValueError, match="shift must be in 0..31"):
        Layer(8, 8, shift=40)
    with pytest.raises(ValueError, match="margin must be in 0..8388607"):
        LossConfig(margin=-1)
    with pytest.raises(ValueError, match="loss mode must be one of host, sign, scaled"):
        LossConfig(mode="ce")
    with pytest.raises(ValueError, match="wd_shift must be in 0..7"):
        LossConfig(wd_shift=8)
    with pytest.raises(ValueError, match="wd_shift must be in 0..7"):
        LossConfig(wd_shift=-1)
    with pytest.raises(ValueError, match="labels must be"):
        hinge_terms(np.zeros((2, 3)), np.array([0, 3]), 1)
    engine = NetEngine(net_config("rt-mlp"))
    with pytest.raises(ValueError, match="layer 1 weights must have shape"):
        engine.load_weights([np.zeros((64, 384), dtype=np.int64), np.zeros((3, 64), dtype=np.int64)])
    with pytest.raises(ValueError, match="x must have shape"):
        engine.infer(np.zeros((16, 383), dtype=np.int64))


def test_config_round_trips_through_json():
    cfg = net_config("digits-mlp", strategy="pregen", batch=32)
    import json

    assert NetConfig.from_dict(json.loads(cfg.to_json())) == cfg
