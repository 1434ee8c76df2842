"""Issue 33: conv layers on the network engine (``hw.engine.conv_path`` in ``hw.engine.net_engine``) against golden
in the Amaranth simulator: full ZO steps of small CNNs (every logit of both passes, every loss and g, the final
weights, a plain inference), digits-cnn itself, the cycles against ``NetConfig.cycle_bound``, and a dense net
built without any conv logic."""

import json

import numpy as np
import pytest

from pezo.cli.main import main
from pezo.golden.engine.conv import Conv2D
from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.nets import net_config
from pezo.golden.engine.network import Layer, NetConfig
from pezo.hw.engine.net_engine import NetEngine
from pezo.sim.amaranth_sim import run_host
from pezo.sim.net_host import net_training

# conv 3x3 pad 1 -> 2x2 max pool -> dense, two batch tiles
TINY_CNN = NetConfig().replace(
    layers=(Conv2D(1, 4, 4, 4, kernel=3, padding=1, pool="max", shift=7, relu=True), Layer(16, 3)),
    rows=2,
    cols=4,
    batch=4,
    name="tiny-cnn",
)
# a conv layer reading the HWC hidden buffer (zero padding at every border), an avg pool, biases
TWO_CONV = NetConfig().replace(
    layers=(
        Conv2D(1, 8, 8, 4, kernel=3, padding=1, pool="max", shift=7, relu=True),
        Conv2D(4, 4, 4, 4, kernel=3, padding=1, pool="avg", shift=8, relu=True, bias=True),
        Layer(16, 3, bias=True),
    ),
    rows=2,
    cols=4,
    batch=4,
    name="two-conv",
)
# stride 2 without a pool, then a 1x1 conv: one-word rows (the row buffer read in the cycle it is written)
STRIDED = NetConfig().replace(
    layers=(
        Conv2D(1, 4, 4, 4, kernel=3, stride=2, padding=1, shift=7),
        Conv2D(4, 2, 2, 4, kernel=1, shift=6, relu=True),
        Layer(16, 2),
    ),
    rows=1,
    cols=4,
    batch=2,
    name="strided",
)
# a one-word conv layer 0 over two channels with an avg pool
POINTWISE = NetConfig().replace(
    layers=(Conv2D(2, 2, 2, 4, kernel=1, pool="avg", shift=6), Layer(4, 2)), rows=2, cols=2, batch=2, name="pointwise"
)


def _draws(cfg, steps, seed):
    """The run's batches, labels, start weights and biases (``conv_run``)."""
    rng = np.random.default_rng(seed)
    xs = rng.integers(-128, 128, (steps, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (steps, cfg.array.batch))
    w = rng.integers(-40, 41, cfg.weights)
    biases = None
    if any(layer.bias for layer in cfg.layers):
        biases = [rng.integers(-3000, 3000, layer.bias_size) if layer.bias else None for layer in cfg.layers]
    return xs, ys, w, biases


def conv_run(cfg, loss, steps=3, seed=1):
    """``net_training`` (RTL and golden in lockstep) over random batches and weights."""
    xs, ys, w, biases = _draws(cfg, steps, seed)
    return run_host(NetEngine(cfg), lambda io: net_training(io, cfg, loss, xs, ys, w, biases))


def golden_conv_kernels(cfg, loss, steps=3, seed=1):
    """Golden's conv weights (global order) before and after ``conv_run``'s steps (on-chip g)."""
    from pezo.golden.engine.network import NetEngine as GoldenNet

    xs, ys, w, biases = _draws(cfg, steps, seed)
    model = GoldenNet(cfg, w, biases)
    for x, y in zip(xs, ys):
        model.train_step(x, y, loss)
    end = sum(cfg.layer_weights(i) for i, layer in enumerate(cfg.layers) if layer.kind == "conv")
    return w[:end], model.flat[:end]


@pytest.mark.parametrize(
    "cfg, loss",
    [
        (TINY_CNN, LossConfig(mode="sign", margin=100)),
        (TINY_CNN.replace(strategy="pregen"), LossConfig(mode="scaled", margin=100, g_shift=4, wd_shift=3)),
        (TINY_CNN, LossConfig(mode="host", margin=100)),
        (TWO_CONV, LossConfig(mode="sign", margin=100)),
        (STRIDED, LossConfig(mode="sign", margin=100)),
        (POINTWISE, LossConfig(mode="sign", margin=100)),
    ],
    ids=["tiny-sign", "tiny-pregen-scaled-wd", "tiny-host", "two-conv-avg-bias", "strided-1x1", "pointwise-avg"],
)
def test_conv_nets_match_golden_on_the_amaranth_simulator(cfg, loss):
    """Three ZO steps: every logit of both passes, the losses, g, the final weights and a plain inference equal
    golden's; the update replayed the stream over the conv kernels (golden's changed: so the RTL's did); the
    steps took at least the cycle bound."""
    result = conv_run(cfg, loss)
    assert result["match"], result["mismatches"]
    assert len(result["records"]) == 3 and any(r["g"] for r in result["records"])
    if loss.on_chip:
        assert result["load_hidden"] and result["wait_cycles"] == 0
        assert cfg.cycle_bound() <= result["busy_cycles_per_step"]
        start, final = golden_conv_kernels(cfg, loss)
        assert not np.array_equal(start, final)


def test_digits_cnn_matches_golden_within_the_bound():
    """digits-cnn (conv 3x3x8 maxpool, conv 3x3x16 maxpool, dense 64-32-10) on the 8 x 8 array, one batch tile:
    two steps bit-exact, at most 2 % over ``cycle_bound`` (the conv bound: OH * OW * out_channels * row_words
    issue cycles per tile)."""
    cfg = net_config("digits-cnn", batch=8)
    result = conv_run(cfg, LossConfig(mode="sign", margin=1000), steps=2)
    assert result["match"], result["mismatches"]
    assert cfg.cycle_bound() <= result["busy_cycles_per_step"] <= 1.02 * cfg.cycle_bound()


# ZO on two conv layers, the backprop tail on the dense classifier (square array, two tiles)
CNN_TAIL = NetConfig().replace(
    layers=(
        Conv2D(1, 4, 4, 4, kernel=3, padding=1, pool="max", shift=7, relu=True),
        Conv2D(4, 2, 2, 4, kernel=3, padding=1, shift=8, relu=True),
        Layer(16, 8, shift=7, relu=True),
        Layer(8, 3),
    ),
    rows=4,
    cols=4,
    batch=8,
    name="cnn-tail",
    backprop=True,
)


@pytest.mark.parametrize("split", [2, 3, 4], ids=["cls1", "cls2", "full-zo"])
def test_a_cnn_with_the_backprop_tail_matches_golden(split):
    """ElasticZO-INT8 on a CNN: ZO over the conv layers (their walks fill the per-tile activation slots), the
    integer tail over the dense ones (reading the HWC conv output as its input), bit-exact, the tail's cycles at
    most 10 % over its bound."""
    loss = LossConfig(mode="sign", margin=100, split=split, bp_bits=3)
    result = conv_run(CNN_TAIL, loss)
    assert result["match"], result["mismatches"]
    bound = CNN_TAIL.bp_cycle_bound(split) if split < 4 else 0
    assert bound <= result["bp_cycles_per_step"] <= 1.10 * bound


def test_a_dense_net_builds_no_conv_logic():
    from amaranth.back import verilog

    text = verilog.convert(NetEngine(net_config("digits-mlp")), name="net_engine", emit_src=False)
    assert "conv_" not in text and "pool_" not in text


@pytest.mark.rtl
@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_pezo_sim_engine_trains_digits_cnn_on_the_rtl_like_golden(simulator, require_simulator, capsys):
    """``pezo sim engine --net digits-cnn`` (its default split cls1: ZO on the two conv layers, the backprop tail on
    the dense classifier) with real digits: every logit, loss, g and the final weights equal golden's; the step's
    cycles within 2 % of ``step_cycle_bound`` while busy (10 % wall, with the host's logit reads; 4.7 % measured)."""
    require_simulator(simulator)
    argv = ["sim", "engine", "--net", "digits-cnn", "--steps", "3", "--batch", "16", "--simulator", simulator]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["match"] is True and result["mismatch_count"] == 0, result["mismatches"]
    assert (result["net"], result["split"], result["steps"], result["batch"]) == ("digits-cnn", "cls1", 3, 16)
    assert result["busy_cycle_ratio"] <= 1.02 and result["cycle_ratio"] <= 1.10
    assert result["bp_cycle_bound"] <= result["bp_cycles"] <= 1.02 * result["bp_cycle_bound"]
