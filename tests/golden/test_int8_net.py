"""The golden whole-network INT8 trainer (``pezo.golden.zo.int8_net``): config checks, the digits data,
a short run that is deterministic per seed and beats its start, both loss modes stepping exactly the
engine's arithmetic (``NetEngine``), the result keys; the float MeZO reference."""

import dataclasses
import json

import numpy as np
import pytest

from pezo.golden.engine.network import NetEngine
from pezo.golden.engine.zo_engine import EngineConfig
from pezo.golden.zo.float_reference import FloatMeZOConfig, train_float_mezo
from pezo.golden.zo.int8_head import Int8TrainConfig, batch_schedule, update_scale
from pezo.golden.zo.int8_net import host_g, train_int8_net
from pezo.golden.zo.net_config import TUNED, NetTrainConfig
from pezo.golden.zo.net_data import digits_split, load_data, quantize_digits
from pezo.golden.zo.net_eval import average_weights, engine_accuracy
from pezo.golden.zo.net_init import init_weights

FAST = TUNED["digits-mlp"].replace(steps=300, eval_every=100)
KEYS = {"test_accuracy", "start_accuracy", "forward_passes", "seconds_per_step", "net", "loss", "steps", "curve"}


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("net", "mnist", "net must be one of digits-mlp, digits-cnn, rt-mlp, rt-head, got 'mnist'"),
        ("loss", "cpu", "loss must be one of on-chip, host"),
        ("g_mode", "adam", "g_mode must be one of sign, scaled"),
        ("margin", -1, "margin"),
        ("g_lr", 0, "g_lr"),
        ("g_shift", 48, "g_shift"),
        ("lr", 0.0, r"lr must be a finite number in \(0, 1e\+06\]"),
        ("lr", float("nan"), "lr must be a finite number"),
        ("steps", 0, "steps"),
        ("seed", 0, "seed"),
        ("strategy", "gaussian", "strategy must be one of otf, pregen"),
        ("batch", 12, "rows=8 does not tile batch=12"),
        ("eps_shift", 25, "eps_shift"),
        ("init_std", 200.0, r"init_std must be a finite number in \(0, 127\]"),
        ("last_init", "random", "last_init must be one of zero, calibrated, probe"),
        ("hidden_init", "xavier", "hidden_init must be one of normal, pca"),
        ("wd_shift", 8, "wd_shift must be in 0..7, got 8"),
        ("wd_shift", -1, "wd_shift must be in 0..7"),
        ("wd_every", 0, "wd_every must be in 1..255"),
        ("wd_every", 256, "wd_every must be in 1..255, got 256"),
        (
            "average_last",
            -1,
            r"average_last must be an integer in 0\.\.16 \(the checkpoints of 4000 steps, one every 250\), got -1",
        ),
        ("average_last", 17, r"average_last must be an integer in 0\.\.16"),
        ("average_last", 2.0, r"average_last must be an integer in 0\.\.16"),
        ("average_last", True, r"average_last must be an integer"),
        ("shifts", (7,), "shifts must be None or 2 shift"),
        ("shifts", (7, 40), r"shifts\[1\]"),
        ("split", 4, r"split must be one of full-zo, cls2, cls1, full-bp or a layer index 0\.\.3, got 4"),
        ("split", "head", "split must be one of"),
        ("bp_bits", 3, "bp_bits is a setting of the backprop tail: split 'full-zo'"),
    ],
)
def test_bad_config_values_raise_one_clear_error(field, value, message):
    with pytest.raises(ValueError, match=message):
        NetTrainConfig().replace(**{field: value})


def test_config_round_trips_and_builds_the_engine():
    cfg = TUNED["digits-mlp"].replace(shifts=(9, 8), strategy="pregen")
    assert NetTrainConfig.from_dict(cfg.to_dict()) == cfg
    assert [l.shift for l in cfg.net_config.layers] == [9, 8, 0]
    assert cfg.net_config.stream.strategy == "pregen" and cfg.net_config.stream.seed == cfg.seed
    assert cfg.replace(stream_seed=7).net_config.stream.seed == 7
    assert cfg.loss_config.mode == cfg.g_mode and cfg.replace(loss="host").loss_config.mode == "host"
    with pytest.raises(ValueError, match="unknown NetTrainConfig field"):
        NetTrainConfig.from_dict({"nett": "digits-mlp"})


def test_digits_are_quantised_at_exponent_minus_7_on_the_methods_split():
    assert quantize_digits([0, 1, 8, 15, 16]).tolist() == [-128, -112, 0, 112, 127]
    train, val, test = digits_split(1)
    assert (len(train), len(val), len(test)) == (1000, 300, 497)
    assert len(set(train) | set(val) | set(test)) == 1797
    data = load_data(FAST)
    assert data.x["train"].shape == (1000, 64) and data.act_exponent == -7
    assert data.x["train"].min() >= -128 and data.x["train"].max() <= 127


def test_the_cached_digits_are_scikit_learns_bit_for_bit(private_cache):
    from sklearn.datasets import load_digits

    from pezo.golden.zo import net_data

    want = load_digits()
    net_data._digits.cache_clear()
    try:
        first = net_data._digits()  # from scikit-learn, written to the cache
        assert net_data.digits_cache_path().is_relative_to(private_cache) and net_data.digits_cache_path().exists()
        net_data._digits.cache_clear()
        second = net_data._digits()  # from the cache
        net_data.digits_cache_path().write_bytes(b"damaged")
        net_data._digits.cache_clear()
        third = net_data._digits()  # from scikit-learn again
    finally:
        net_data._digits.cache_clear()
    for images, labels in (first, second, third):
        assert images.dtype == np.float64 and labels.dtype == np.int64
        assert np.array_equal(images, want.images.reshape(-1, 64)) and np.array_equal(labels, want.target)


def test_init_is_seeded_and_calibrated_to_the_shifts():
    data = load_data(FAST)
    cfg = FAST.replace(last_init="calibrated", shifts=(10, 8))  # no weight saturates at these shifts
    w1, stats = init_weights(cfg, data.x["train"])
    w2, _ = init_weights(cfg, data.x["train"])
    assert all(np.array_equal(a, b) for a, b in zip(w1, w2))
    assert not np.array_equal(w1[0], init_weights(cfg.replace(seed=2), data.x["train"])[0][0])
    for layer in stats["layers"][:-1]:  # the requantised pre-activations have about init_std LSB
        assert abs(layer["pre_std"] - cfg.init_std) < 0.15 * cfg.init_std
    assert abs(stats["layers"][-1]["logit_std"] - cfg.init_std * 2**7) < 0.15 * cfg.init_std * 2**7
    zero, _ = init_weights(FAST, data.x["train"])
    assert not zero[-1].any() and zero[0].any()
    head, info = init_weights(FAST.replace(net="rt-head", shifts=None), np.zeros((4, 384), dtype=np.int64))
    assert info == {"start": "zero"} and not head[0].any()


@pytest.fixture(scope="module")
def fast_run():
    return train_int8_net(FAST)


def test_a_short_digits_run_beats_its_start_and_reports_its_keys(fast_run):
    r = fast_run
    assert KEYS <= set(r)
    assert (r["net"], r["loss"], r["steps"], r["forward_passes"]) == ("digits-mlp", "on-chip", 300, 600)
    assert [c["step"] for c in r["curve"]] == [0, 100, 200, 300]
    assert all(set(c) == {"step", "forward_passes", "val_accuracy", "train_loss"} for c in r["curve"])
    assert [c["forward_passes"] for c in r["curve"]] == [0, 200, 400, 600]
    assert r["test_accuracy"] >= r["start_accuracy"] + 0.15
    assert r["best_val_accuracy"] > r["start_val_accuracy"] + 0.15
    assert r["seconds_per_step"] > 0


def test_a_run_is_deterministic_per_seed(fast_run):
    again = train_int8_net(FAST)
    for key in ("test_accuracy", "final_test_accuracy", "curve", "final_weights_digest", "best_step"):
        assert again[key] == fast_run[key]
    other = train_int8_net(FAST.replace(seed=2, steps=100))
    assert other["final_weights_digest"] != fast_run["final_weights_digest"]


@pytest.mark.parametrize("loss", ["on-chip", "host"])
def test_each_step_is_the_engines_arithmetic(loss):
    cfg = FAST.replace(steps=20, eval_every=20, loss=loss, lr=0.05)
    data = load_data(cfg)
    r = train_int8_net(cfg, data=data)
    weights, _ = init_weights(cfg, data.x["train"])
    engine = NetEngine(cfg.net_config, weights=weights)
    for rows in batch_schedule(1000, cfg.array.batch, cfg.steps, cfg.seed):
        x, y = data.x["train"][rows], data.y["train"][rows]
        if loss == "on-chip":
            engine.train_step(x, y, cfg.loss_config)
        else:
            plus, minus = engine.forward_zo(x)
            engine.update(host_g(plus, minus, y, cfg, data.act_exponent)[0])
    assert r["final_weights_digest"] == engine.digest()
    assert r["final_test_accuracy"] == engine_accuracy(engine, data.x["test"], data.y["test"])
    assert r["loss"] == loss and r["g_mode"] == (cfg.g_mode if loss == "on-chip" else "host")


def test_weight_decay_acts_on_every_wd_every_th_step_as_the_engine_with_the_register_set():
    """wd_every = 3: the engine's decay counter picks steps 3, 6, ... (1-based), exactly as a host that sets
    WD_SHIFT for those steps only (wd_every 1) would; the trainer's weights equal that replay and differ
    from the run without decay."""
    cfg = FAST.replace(steps=12, eval_every=12, wd_shift=5, wd_every=3)
    data = load_data(cfg)
    r = train_int8_net(cfg, data=data)
    weights, _ = init_weights(cfg, data.x["train"])
    engine = NetEngine(cfg.net_config, weights=weights)
    on = dataclasses.replace(cfg.loss_config, wd_every=1)
    off = dataclasses.replace(on, wd_shift=0)
    assert cfg.loss_config.wd_every == 3
    for step, rows in enumerate(batch_schedule(1000, cfg.array.batch, cfg.steps, cfg.seed)):
        engine.train_step(data.x["train"][rows], data.y["train"][rows], on if step % 3 == 2 else off)
    assert r["final_weights_digest"] == engine.digest()
    assert r["final_weights_digest"] != train_int8_net(cfg.replace(wd_shift=0), data=data)["final_weights_digest"]
    assert r["config"]["wd_shift"] == 5 and r["config"]["wd_every"] == 3


def test_average_weights_is_the_checkpoint_mean_rounded_half_up():
    ckpts = [np.array([0, 1, -1, 127, -127, 3]), np.array([1, 2, -2, 127, -127, -4])]
    assert average_weights(ckpts).tolist() == [1, 2, -1, 127, -127, 0]  # 0.5 -> 1, 1.5 -> 2, -1.5 -> -1, -0.5 -> 0
    assert average_weights(ckpts[:1]).tolist() == ckpts[0].tolist()
    with pytest.raises(ValueError, match="checkpoints must be a non-empty list"):
        average_weights([])


def test_average_last_reports_the_host_average_of_the_last_checkpoints_without_changing_training():
    """The training trajectory is the same; the reported model is the rounded mean of the weights at the
    last N checkpoints, evaluated by the engine; 1 = the final weights."""
    cfg = FAST.replace(steps=40, eval_every=10)
    data = load_data(cfg)
    base = train_int8_net(cfg, data=data)
    r = train_int8_net(cfg.replace(average_last=3), data=data)
    assert r["final_weights_digest"] == base["final_weights_digest"] and r["curve"] == base["curve"]
    assert base["model"] == "best-validation checkpoint" and r["model"] == "mean of the last 3 checkpoints"
    weights, _ = init_weights(cfg, data.x["train"])
    engine = NetEngine(cfg.net_config, weights=weights)
    ckpts = []
    for step, rows in enumerate(batch_schedule(1000, cfg.array.batch, cfg.steps, cfg.seed)):
        engine.train_step(data.x["train"][rows], data.y["train"][rows], cfg.loss_config)
        if (step + 1) % 10 == 0:
            ckpts.append(engine.flat.copy())
    engine.load_weights(average_weights(ckpts[-3:]))
    assert r["test_accuracy"] == engine_accuracy(engine, data.x["test"], data.y["test"])
    assert (
        r["model_val_accuracy"]
        == r["checkpoint_average_val"]["3"]
        == engine_accuracy(engine, data.x["val"], data.y["val"])
    )
    assert set(base["checkpoint_average_val"]) == {"1", "2", "4"}
    last = train_int8_net(cfg.replace(average_last=1), data=data)
    assert last["test_accuracy"] == last["final_test_accuracy"]


def test_the_probe_start_is_the_validation_tuned_probe_quantised_without_its_bias():
    from pezo.golden.zo.net_init import probe_head

    rng = np.random.default_rng(0)
    w_true = rng.standard_normal(16)
    h_train, h_val = rng.integers(0, 100, (200, 16)), rng.integers(0, 100, (100, 16))
    w_true -= w_true.mean()  # a boundary through the origin: the net's last layer has no bias
    y_train, y_val = (h_train @ w_true > 0).astype(np.int64), (h_val @ w_true > 0).astype(np.int64)
    w, info = probe_head(h_train, y_train, h_val, y_val, 2)
    assert w.shape == (2, 16) and w.dtype.kind == "i" and np.abs(w).max() == 127
    assert info["start"] == "probe" and info["probe_val_accuracy"] > 0.8
    assert ((h_val @ w.T).argmax(axis=1) == y_val).mean() > 0.7  # the quantised, bias-free head still classifies
    with pytest.raises(ValueError, match="needs the data"):
        init_weights(TUNED["rt-mlp"].replace(last_init="probe"), h_train)


def test_the_pca_start_is_the_inputs_top_directions_and_their_negatives_without_labels():
    from pezo.golden.zo.net_init import pca_directions

    rng = np.random.default_rng(3)
    # inputs with a dominant direction u: the first principal direction is +-u
    u = rng.standard_normal(12)
    u /= np.linalg.norm(u)
    h = np.outer(rng.standard_normal(300) * 40, u) + rng.standard_normal((300, 12)) + 5
    w = pca_directions(h, 8)
    assert w.shape == (8, 12)
    assert np.allclose(w[4:], -w[:4]) and np.allclose(w[:4] @ w[:4].T, np.eye(4))
    assert abs(w[0] @ u) > 0.999
    assert all(row[np.abs(row).argmax()] > 0 for row in w[:4])  # sign convention: deterministic
    # the pair keeps every projection through the ReLU: relu(v.x) - relu(-v.x) = v.x
    x = rng.standard_normal((5, 12))
    assert np.allclose(np.maximum(x @ w[:4].T, 0) - np.maximum(x @ w[4:].T, 0), x @ w[:4].T)
    with pytest.raises(ValueError, match="even width"):
        pca_directions(h, 7)
    with pytest.raises(ValueError, match="even width"):
        pca_directions(h, 26)


def test_a_pca_start_calibrates_like_the_normal_one_and_only_changes_the_hidden_directions():
    data = load_data(FAST)
    normal, _ = init_weights(FAST, data.x["train"], data)
    pca, info = init_weights(FAST.replace(hidden_init="pca"), data.x["train"], data)
    assert info["start"] == "calibrated pca" and [l.get("directions") for l in info["layers"][:2]] == ["pca", "pca"]
    # calibrated as before (layer 1's weights saturate at the preset shift 9 either way: module docstring)
    assert abs(info["layers"][0]["pre_std"] - FAST.init_std) < 1
    assert not np.array_equal(pca[0], normal[0]) and np.array_equal(pca[-1], normal[-1])  # last layer: zero
    assert np.array_equal(pca[0], init_weights(FAST.replace(hidden_init="pca"), data.x["train"], data)[0][0])
    assert NetTrainConfig.from_dict(FAST.replace(hidden_init="pca").to_dict()).hidden_init == "pca"


def test_the_backprop_reference_chooses_on_validation_and_never_looks_at_test(monkeypatch):
    import pezo.golden.zo.float_reference as float_reference
    from pezo.golden.zo.float_reference import float_mlp_backprop
    from pezo.golden.zo.net_data import NetData

    monkeypatch.setattr(float_reference, "BACKPROP_L2_GRID", (0.01, 1.0))
    monkeypatch.setattr(float_reference, "BACKPROP_INITS", (0, 1))
    rng = np.random.default_rng(2)
    x = {n: rng.standard_normal((k, 6)) for n, k in (("train", 120), ("val", 60), ("test", 60))}
    y = {n: (v[:, 0] * v[:, 1] > 0).astype(np.int64) for n, v in x.items()}  # XOR-like: needs the hidden layer
    data = NetData({}, y, x, 0, 2, {})
    r = float_mlp_backprop(data, (16,))
    assert set(r) >= {
        "float_mlp_backprop_test_accuracy",
        "float_mlp_backprop_val_accuracy",
        "float_mlp_backprop_l2",
        "float_mlp_backprop_init",
    }
    assert r["float_mlp_backprop_l2"] in (0.01, 1.0) and r["float_mlp_backprop_val_accuracy"] > 0.75
    assert float_mlp_backprop(data, (16,)) == r  # cached per data object and shape
    flipped = NetData({}, {**y, "test": 1 - y["test"]}, x, 0, 2, {})
    again = float_mlp_backprop(flipped, (16,))
    assert {k: v for k, v in again.items() if "test" not in k} == {k: v for k, v in r.items() if "test" not in k}
    assert again["float_mlp_backprop_test_accuracy"] == pytest.approx(1 - r["float_mlp_backprop_test_accuracy"])


def test_host_g_is_int8_heads_update_scale_for_the_head():
    cfg = NetTrainConfig().replace(net="rt-head", loss="host", lr=0.5, eps_shift=10)
    head = Int8TrainConfig(lr=0.5, weight_exponent=-7, engine=EngineConfig().replace(eps_shift=10))
    rng = np.random.default_rng(5)
    plus, minus = rng.integers(-4000, 4000, (16, 2)), rng.integers(-4000, 4000, (16, 2))
    labels = rng.integers(0, 2, 16)
    assert host_g(plus, minus, labels, cfg, -9) == update_scale(plus, minus, labels, head, -9)


def test_the_float_mezo_reference_runs_on_the_same_shape_and_budget():
    cfg = FloatMeZOConfig(net="digits-mlp", steps=50, eval_every=25, batch=FAST.array.batch, lr=0.02, eps=1e-3)
    r = train_float_mezo(cfg)
    assert KEYS <= set(r) and r["loss"] == "float-mezo" and r["forward_passes"] == 100
    assert train_float_mezo(cfg)["curve"] == r["curve"]
    with pytest.raises(ValueError, match="eps must be a finite number"):
        dataclasses.replace(cfg, eps=-1.0)


@pytest.mark.parametrize("split, c, passes", [("cls2", 2, 2), ("cls1", 1, 2), ("full-bp", 0, 1), (1, 1, 2)])
def test_a_split_run_is_the_engines_hybrid_step_and_reports_the_split(split, c, passes):
    cfg = FAST.replace(steps=20, eval_every=10, split=split, bp_bits=2)
    data = load_data(cfg)
    r = train_int8_net(cfg, data=data, probe=False)
    weights, _ = init_weights(cfg, data.x["train"])
    engine = NetEngine(cfg.net_config, weights=weights)
    assert cfg.loss_config.split == c and cfg.loss_config.bp_bits == 2
    for rows in batch_schedule(1000, cfg.array.batch, cfg.steps, cfg.seed):
        engine.train_step(data.x["train"][rows], data.y["train"][rows], cfg.loss_config)
    assert r["final_weights_digest"] == engine.digest()
    assert (r["split_c"], r["bp_bits"], r["forward_passes"]) == (c, 2, passes * 20)
    assert r["split"] == {2: "cls2", 1: "cls1", 0: "full-bp"}[c]


def test_full_bp_on_chip_trains_the_digits_mlp_within_a_few_hundred_steps():
    r = train_int8_net(FAST.replace(steps=200, split="full-bp"), probe=False)
    assert r["test_accuracy"] >= 0.9 and r["bp_bits"] == 3 and r["split"] == "full-bp"


def test_train_int8_split_json_keeps_the_contract(capsys):
    from pezo.cli.main import main

    assert (
        main(
            ["train-int8", "--net", "digits-mlp", "--split", "cls1", "--steps", "40", "--eval-every", "20"]
            + ["--json", "--quiet"]
        )
        == 0
    )
    r = json.loads(capsys.readouterr().out)
    keys = {"test_accuracy", "final_test_accuracy", "split", "split_c", "bp_bits", "forward_passes", "seconds_per_step"}
    assert keys <= set(r)
    assert (r["split"], r["split_c"], r["bp_bits"], r["forward_passes"]) == ("cls1", 1, 2, 80)
    assert r["model"] == "mean of the last 2 checkpoints"  # the split's default average, capped at 2 checkpoints
