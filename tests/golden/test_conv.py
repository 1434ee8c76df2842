"""Issue 33: conv layers in the golden layer program -- arithmetic against a direct loop, the im2col order, the ZO
step on a tiny CNN, the network file and the refusals."""

import json

import numpy as np
import pytest

from pezo.golden.engine.conv import (
    Conv2D,
    batch_patches,
    conv_forward,
    hwc_order,
    im2col,
    kernel_rows,
    kernel_tensor,
    patch_word_addresses,
)
from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.net_file import NetFile, dumps_net, load_net, net_from_dict
from pezo.golden.engine.network import Layer, NetConfig, NetEngine, forward_pass
from pezo.golden.engine.zo_engine import perturbed_weights, updated_weights
from pezo.golden.rounding import round_shift


def direct_conv(h, layer: Conv2D, w, bias, from_batch=False):
    """The layer by nested loops: the docstring's definition, no im2col, no BLAS. Input HWC (channel-major
    ``from_batch``), kernel rows in the lane order (ky, kx, ci), output HWC."""
    b = h.shape[0]
    if from_batch:
        x = h.reshape(b, layer.in_channels, layer.height, layer.width)
    else:
        x = h.reshape(b, layer.height, layer.width, layer.in_channels).transpose(0, 3, 1, 2)
    k, s, p = layer.kernel, layer.stride, layer.padding
    kern = w[:, : layer.patch].reshape(layer.out_channels, k, k, layer.in_channels)
    oh, ow = layer.conv_height, layer.conv_width
    q = np.zeros((b, oh, ow, layer.out_channels), dtype=np.int64)
    for n in range(b):
        for o in range(layer.out_channels):
            for oy in range(oh):
                for ox in range(ow):
                    acc = int(bias[o])
                    for ci in range(layer.in_channels):
                        for ky in range(k):
                            for kx in range(k):
                                y, xx = oy * s - p + ky, ox * s - p + kx
                                if 0 <= y < layer.height and 0 <= xx < layer.width:
                                    acc += int(x[n, ci, y, xx]) * int(kern[o, ky, kx, ci])
                    v = (acc + (1 << (layer.shift - 1))) >> layer.shift if layer.shift else acc
                    q[n, oy, ox, o] = min(max(v, 0 if layer.relu else -127), 127)
    if layer.pool == "none":
        return q.reshape(b, -1)
    out = np.zeros((b, oh // 2, ow // 2, layer.out_channels), dtype=np.int64)
    for n, y, xx, o in np.ndindex(out.shape):
        win = [int(q[n, 2 * y + dy, 2 * xx + dx, o]) for dy in (0, 1) for dx in (0, 1)]
        out[n, y, xx, o] = max(win) if layer.pool == "max" else (sum(win) + 2) >> 2
    return out.reshape(b, -1)


LAYERS = [
    Conv2D(1, 8, 8, 4, kernel=3, padding=1, pool="max", shift=7, relu=True),
    Conv2D(2, 6, 6, 3, kernel=3, stride=2, padding=1, shift=6),
    Conv2D(3, 5, 5, 2, kernel=5, padding=2, pool="none", shift=9, relu=True, bias=True),
    Conv2D(2, 4, 4, 3, kernel=1, pool="avg", shift=4),
    Conv2D(2, 9, 9, 2, kernel=3, stride=2, pool="avg", shift=5, relu=True),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda l: l.describe())
@pytest.mark.parametrize("cols", [8, 4])
@pytest.mark.parametrize("from_batch", [False, True], ids=["hwc", "batch"])
def test_conv_matches_the_direct_loop(layer, cols, from_batch):
    rng = np.random.default_rng(layer.kernel * 10 + cols)
    h = rng.integers(-128, 128, (3, layer.inputs))
    w = rng.integers(-127, 128, layer.weight_shape(cols))  # the pad lanes' weights are arbitrary: they multiply 0
    bias = rng.integers(-5000, 5000, layer.out_channels) if layer.bias else np.zeros(layer.out_channels, dtype=int)
    expected = direct_conv(h, layer, w, bias, from_batch)
    assert np.array_equal(conv_forward(h, layer, w, bias, cols, from_batch), expected)


def test_avg_pool_rounds_half_up():
    assert list(round_shift(np.array([-6, -5, -2, 2, 5, 6]), 2)) == [-1, -1, 0, 1, 1, 2]  # -1.5 -> -1, 0.5 -> 1


def test_im2col_order_is_kernel_row_kernel_col_channel_and_pads_zero():
    layer = Conv2D(2, 3, 3, 1, kernel=3, padding=1)
    h = np.arange(1, layer.inputs + 1).reshape(1, -1)  # value = flat index + 1 ([y, x, c] row-major: HWC)
    patches = im2col(h, layer, 8)
    assert patches.shape == (1, 9, 24)  # 18 lanes of data, padded to 24
    centre = patches[0, 4]  # output pixel (1, 1): the whole 3x3 neighbourhood, both channels of a pixel adjacent
    assert list(centre[:18]) == list(range(1, 19)) and not centre[18:].any()
    corner = patches[0, 0]  # pixel (0, 0): its top row and left column are zero padding
    assert list(corner[:18]) == [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 7, 8, 9, 10]
    batch = im2col(h, layer, 8, from_batch=True)  # layer 0: the channel-major batch, the same lane order
    assert list(batch[0, 4, :6]) == [1, 10, 2, 11, 3, 12]  # (ky, kx) = (0, 0), (0, 1), (0, 2); channel innermost
    assert np.array_equal(batch_patches(h, layer, 8), batch.reshape(1, -1))  # what the host writes


def test_kernel_rows_hwc_order_and_their_inverses():
    layer = Conv2D(3, 4, 5, 2, kernel=3, padding=1)
    kernels = np.arange(2 * 3 * 3 * 3).reshape(2, 3, 3, 3)  # [out, in, kh, kw]
    rows = kernel_rows(kernels)
    assert rows[1, (2 * 3 + 1) * 3 + 2] == kernels[1, 2, 2, 1]  # lane (ky * k + kx) * in + ci
    assert np.array_equal(kernel_tensor(np.pad(rows, ((0, 0), (0, 5))), layer), kernels)
    chw = np.arange(60).reshape(1, 3, 4, 5)
    perm = hwc_order(3, 4, 5)
    assert np.array_equal(chw.reshape(1, -1)[:, perm], chw.transpose(0, 2, 3, 1).reshape(1, -1))


TINY = (
    Conv2D(1, 4, 4, 2, kernel=3, padding=1, pool="max", shift=6, relu=True),
    Layer(8, 8, shift=6, relu=True),
    Layer(8, 3),
)


def tiny_engine(seed=3):
    config = NetConfig(layers=TINY, name="tiny-cnn").replace(batch=8, eps_shift=11)
    rng = np.random.default_rng(seed)
    weights = [rng.integers(-60, 61, config.weight_shape(i)) for i in range(len(TINY))]
    return config, NetEngine(config, weights=weights)


def test_global_order_offsets_and_cycles_of_a_cnn():
    config = load_net("digits-cnn").config
    assert [config.weight_shape(i) for i in range(4)] == [(8, 16), (16, 72), (32, 64), (10, 32)]
    assert config.layer_offsets() == [0, 128, 1280, 3328] and config.weights == 3648
    # a conv layer's words run once per output pixel: 64 pixels x 16 words, 16 x 144 words, then the dense ones
    assert [config.layer_cycles(i) for i in range(4)] == [1024, 2304, 256, 40]
    assert config.useful_mac_cycles() == 2 * config.array.tiles * (1024 + 2304 + 256 + 40)
    util = config.layer_utilisation()  # the first conv's patch is 9 of 16 lanes
    assert [u["cycles_per_tile"] for u in util] == [1024, 2304, 256, 40] and util[0]["mac_utilisation"] < 9 / 16


def test_a_later_conv_needs_whole_activation_words_of_channels():
    first = Conv2D(1, 8, 8, 4, padding=1, pool="max", shift=6, relu=True)
    with pytest.raises(
        ValueError,
        match=r"layer 1 \(conv3x3/1 pad 1 64 -> 8x4x4\): a conv layer after the first .* "
        r"in_channels \(4\) must be a multiple of 8",
    ):
        NetConfig(layers=(first, Conv2D(4, 4, 4, 8, padding=1), Layer(128, 2)))
    config = NetConfig.from_dict({"layers": (first, Conv2D(4, 4, 4, 8, padding=1), Layer(128, 2)), "cols": 4})
    assert config.weight_shape(1) == (8, 36) and config.input_words == 64 * 12 // 4  # layer 0 im2col'd: 3 words


def test_zo_step_on_a_tiny_cnn_walks_the_global_order():
    config, engine = tiny_engine()
    flat0 = engine.flat.copy()
    x = np.random.default_rng(0).integers(-128, 128, (8, 16))
    labels = np.arange(8) % 3
    record = engine.train_step(x, labels, LossConfig(margin=256))
    p = engine.perturbation
    assert p.size == config.weights == 2 * 16 + 64 + 24 and np.any(p[:32])  # the conv's padded rows are perturbed
    split = engine._split
    assert np.array_equal(
        record.logits_plus, forward_pass(config, x, split(perturbed_weights(flat0, p)), engine.biases)[0]
    )
    assert np.array_equal(
        record.logits_minus, forward_pass(config, x, split(perturbed_weights(flat0, -p)), engine.biases)[0]
    )
    assert np.array_equal(engine.flat, updated_weights(flat0, p, record.g, 0))


def test_cls2_keeps_the_conv_in_zo_and_a_conv_in_the_tail_is_refused():
    config, engine = tiny_engine()
    x = np.random.default_rng(1).integers(-128, 128, (8, 16))
    conv0 = engine.weights[0].copy()
    record = engine.train_step(x, np.arange(8) % 3, LossConfig(margin=256, split=1, bp_bits=3))
    assert record.split == 1 and record.tail.updates[0] is None and record.tail.updates[2] is not None
    assert not np.array_equal(engine.weights[0], conv0)  # the ZO update moved the conv
    with pytest.raises(ValueError, match=r"split 0 puts layer 0 \(conv3x3/1 pad 1 16 -> 2x2x2 relu maxpool\) in the"):
        engine.split_point(0)


@pytest.mark.parametrize(
    "fields, needle",
    [
        ({"stride": 3}, "stride must be one of 1, 2, got 3"),
        ({"padding": 2}, "padding must be an integer in 0..1"),
        ({"kernel": 7, "padding": 0}, "a 7x7 kernel is larger than the padded 5x5 input"),
        ({"pool": "max"}, "a 2x2 max pool needs an even output size, got 5x5"),
        ({"pool": "min"}, "pool must be one of none, max, avg"),
    ],
)
def test_conv_refusals_name_the_layer(fields, needle):
    with pytest.raises(ValueError, match="conv .*" + needle.replace("(", r"\(")):
        Conv2D(**{"in_channels": 1, "height": 5, "width": 5, "out_channels": 2, "kernel": 3, "padding": 1, **fields})


def test_a_conv_cannot_give_the_logits():
    with pytest.raises(ValueError, match="the last layer .* must be a dense layer"):
        NetConfig(layers=(Conv2D(1, 4, 4, 2, padding=1),))


def test_net_file_round_trip_of_a_cnn_and_old_files_unchanged():
    config, engine = tiny_engine()
    net = NetFile(config, {"batch": 8, "eps_shift": 11}, -7, tuple(engine.weights), None)
    data = json.loads(dumps_net(net.to_dict()))
    assert data["layers"][0]["kind"] == "conv" and np.array(data["weights"][0]).shape == (2, 9)  # no pad lanes
    back = net_from_dict(data)
    assert back.config == config
    x = np.random.default_rng(2).integers(-128, 128, (8, 16))
    assert np.array_equal(back.engine().infer(x), engine.infer(x))  # the pad lanes load as 0: same logits
    assert "kind" not in json.dumps(load_net("digits-mlp").to_dict())  # dense-only files are as before
    with pytest.raises(ValueError, match=r"key 'layers\[0\]\.in_channels' is missing"):
        net_from_dict({**data, "layers": [{"kind": "conv", "height": 4, "width": 4, "out_channels": 2}]})
    with pytest.raises(ValueError, match=r"unknown key 'layers\[1\]\.kernel' \(allowed for dense"):
        net_from_dict({**data, "layers": [data["layers"][0], {**data["layers"][1], "kernel": 3}, data["layers"][2]]})


@pytest.mark.parametrize("split, bits", [(None, 1), ("full-zo", None)])
def test_train_int8_runs_the_digits_cnn(split, bits, capsys):
    from pezo.cli.main import main

    argv = ["train-int8", "--net", "digits-cnn", "--steps", "30", "--eval-every", "10", "--json", "--quiet"]
    assert main(argv + (["--split", split] if split else [])) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["net"] == "digits-cnn" and r["weights"] == 3648 and r["split"] == (split or "cls1")  # NET_SPLITS
    assert r["bp_bits"] == bits and r["model"] == "mean of the last 3 checkpoints"  # SPLIT_DEFAULTS, capped
    assert r["test_accuracy"] > r["start_accuracy"]


def replay_walk(h, layer: Conv2D, w, cols, from_batch):
    """The layer's int8 output by following ``patch_word_addresses`` word by word, as the RTL would: read the
    addressed word (or zeros), accumulate, requantise on ``last``, fold the pool window, write the output lane."""
    walk = patch_word_addresses(layer, cols, from_batch)
    words = (batch_patches(h, layer, cols) if from_batch else h).reshape(len(h), -1, cols)
    out = np.full((len(h), -(-layer.outputs // cols) * cols), -999, dtype=np.int64)
    acc = pooled = 0
    for t in range(len(walk["addr"])):
        o, word = walk["channel"][t], walk["word"][t]
        act = 0 * words[:, 0] if walk["zero"][t] else words[:, walk["addr"][t]]
        acc = (0 if walk["first"][t] else acc) + act @ w[o, word * cols : (word + 1) * cols]
        if not walk["last"][t]:
            continue
        q = np.clip(round_shift(acc, layer.shift), 0 if layer.relu else -127, 127)
        if walk["pool_first"][t]:
            pooled = q
        elif layer.pool == "max":
            pooled = np.maximum(pooled, q)
        else:
            pooled = pooled + q
        if walk["pool_last"][t]:
            out[:, walk["out_word"][t] * cols + walk["out_lane"][t]] = (
                round_shift(pooled, 2) if layer.pool == "avg" else pooled
            )
    return out[:, : layer.outputs]


WALKS = [
    (Conv2D(1, 8, 8, 8, kernel=3, padding=1, pool="max", shift=9, relu=True), True, 8),  # digits-cnn's conv1
    (Conv2D(8, 4, 4, 16, kernel=3, padding=1, pool="max", shift=8, relu=True), False, 8),  # and conv2
    (Conv2D(16, 6, 6, 3, kernel=3, stride=2, padding=1, shift=7), False, 8),
    (Conv2D(8, 5, 5, 4, kernel=5, padding=2, shift=9, relu=True), False, 4),
    (Conv2D(3, 8, 8, 6, kernel=3, padding=1, pool="avg", shift=8), True, 8),
]


@pytest.mark.parametrize(
    "layer, from_batch, cols", WALKS, ids=lambda v: v.describe() if hasattr(v, "describe") else str(v)
)
def test_the_address_walk_computes_the_layer(layer, from_batch, cols):
    rng = np.random.default_rng(layer.out_channels)
    h = rng.integers(-128, 128, (3, layer.inputs))
    w = rng.integers(-127, 128, layer.weight_shape(cols))
    expected = conv_forward(h, layer, w, np.zeros(layer.out_channels, dtype=int), cols, from_batch)
    assert np.array_equal(replay_walk(h, layer, w, cols, from_batch), expected)
    walk = patch_word_addresses(layer, cols, from_batch)
    assert len(walk["addr"]) == layer.pixels * layer.out_channels * layer.row_length(cols) // cols
    assert walk["stream"].sum() == layer.out_channels * layer.row_length(cols) // cols  # each row streamed once


def test_the_walk_of_digits_cnn_matches_the_cycle_bound_and_refuses_split_channels():
    config = load_net("digits-cnn").config
    for i in (0, 1):
        assert len(patch_word_addresses(config.layers[i], 8, from_batch=i == 0)["addr"]) == config.layer_cycles(i)
    with pytest.raises(ValueError, match=r"conv 3x3/1 pad 1 4x4x4 -> 8: the walk reads one activation word of 8"):
        patch_word_addresses(Conv2D(4, 4, 4, 8, padding=1), 8)


# digits-cnn's default short runs (split_config, seed 1, 60 steps): final weights digests on the addressable layout
# (HWC activations, rows (ky, kx, ci), issue 33's address walk); on the channel-major layout they were cls1
# ae539be9ef12a360 and full-zo f163154b8ffee17e (the full default run: 5f63607d5ecdf0cc -> 7c2d3cde09652307,
# benchmarks/results/engine_net/cnn/runs/digits-cnn-cls1-s1.json).
CNN_DIGESTS = {"cls1": "04ce2d071405ec2c", "full-zo": "2df10751776e2d91"}


@pytest.mark.parametrize("split", sorted(CNN_DIGESTS))
def test_digits_cnn_short_runs_are_pinned(split):
    from pezo.golden.zo.int8_net import train_int8_net
    from pezo.golden.zo.net_config import split_config

    config = split_config("digits-cnn", split, seed=1).replace(steps=60, eval_every=20, average_last=3)
    assert train_int8_net(config)["final_weights_digest"] == CNN_DIGESTS[split]
