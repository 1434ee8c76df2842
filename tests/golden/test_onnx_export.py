"""ONNX export (golden.engine.onnx_export): onnxruntime runs the QDQ model on the float input and gives the engine's
logits bit for bit -- ties of the round-half-up shifts, a hidden layer without ReLU, biases -- at every graph
optimisation level."""

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from pezo.golden.engine.net_file import NetFile  # noqa: E402
from pezo.golden.engine.network import Layer, NetConfig, forward_network  # noqa: E402
from pezo.golden.engine.onnx_export import export_qdq  # noqa: E402

LEVELS = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)


def run_ort(model, x, level):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"input": np.asarray(x, dtype=np.float32)})


def random_net(seed=0):
    layers = (
        Layer(32, 24, shift=3, relu=True, bias=True, weight_exponent=-6),
        Layer(24, 16, shift=4, relu=False, bias=False, weight_exponent=-7),
        Layer(16, 8, shift=0, relu=True, weight_exponent=-5),
        Layer(8, 5, bias=True, weight_exponent=-8),
    )
    rng = np.random.default_rng(seed)
    weights = tuple(rng.integers(-127, 128, (l.outputs, l.inputs)) for l in layers)
    biases = tuple(rng.integers(-3000, 3000, l.outputs) if l.bias else None for l in layers)
    return NetFile(NetConfig(layers=layers, name="random"), {}, -4, weights, biases)


@pytest.mark.parametrize("level", LEVELS)
def test_onnxruntime_gives_the_engine_logits_bit_for_bit(level):
    net = random_net()
    q = np.random.default_rng(1).integers(-128, 128, (512, 32))
    engine = forward_network(net.config, q, list(net.weights), [b if b is not None else 0 for b in net.biases])
    e_logits = net.input_exponent + sum(l.weight_exponent for l in net.config.layers)
    e_logits += sum(l.shift for l in net.config.layers[:-1])
    logits, label = run_ort(export_qdq(net), np.ldexp(q.astype(np.float64), net.input_exponent), level)
    assert np.array_equal(np.ldexp(logits.astype(np.float64), -e_logits), engine)
    assert np.array_equal(label, engine.argmax(axis=1))


def test_the_float_input_is_quantised_as_the_data_rule_says():
    from pezo.golden.engine.calibration import quantize_rint

    net = random_net(2)
    x = np.random.default_rng(3).normal(0, 3, (256, 32))
    x[:8, 0] = np.ldexp(np.arange(8) + 0.5, net.input_exponent)  # exact ties: half to even
    q = quantize_rint(x, net.input_exponent)
    engine = forward_network(net.config, q, list(net.weights), [b if b is not None else 0 for b in net.biases])
    _, label = run_ort(export_qdq(net), x, LEVELS[1])
    assert np.array_equal(label, engine.argmax(axis=1))


def test_a_network_without_weights_is_not_exported():
    net = random_net()
    with pytest.raises(ValueError, match="has no weights to export"):
        export_qdq(NetFile(net.config, {}, -4))


def random_cnn_net(pool, seed=0, channels=1):
    """Issue 33: conv layers (with and without bias, ReLU, both pools, stride 2) before dense ones; a layer 0 of
    ``channels`` input channels (the batch channel-major, the rows (ky, kx, ci), the activations HWC)."""
    from pezo.golden.engine.conv import Conv2D

    layers = (
        Conv2D(channels, 8, 8, 8, padding=1, pool=pool, shift=6, relu=True, bias=True, weight_exponent=-6),
        Conv2D(8, 4, 4, 8, stride=2, padding=1, shift=5, relu=False, weight_exponent=-7),
        Layer(32, 5, bias=True, weight_exponent=-8),
    )
    config = NetConfig(layers=layers, name="random-cnn")
    rng = np.random.default_rng(seed)
    weights = tuple(rng.integers(-127, 128, config.weight_shape(i)) for i in range(len(layers)))
    biases = tuple(rng.integers(-3000, 3000, l.bias_size) if l.bias else None for l in layers)
    return NetFile(config, {}, -4, config.fit_weights(weights), biases)


@pytest.mark.parametrize("pool, channels", [("max", 1), ("avg", 1), ("max", 3)])
@pytest.mark.parametrize("level", LEVELS)
def test_a_cnn_exports_bit_for_bit(pool, channels, level):
    net = random_cnn_net(pool, channels=channels)
    q = np.random.default_rng(1).integers(-128, 128, (256, net.config.inputs))
    engine = forward_network(net.config, q, list(net.weights), [b if b is not None else 0 for b in net.biases])
    e_logits = net.input_exponent + sum(l.weight_exponent for l in net.config.layers)
    e_logits += sum(l.shift for l in net.config.layers[:-1])
    logits, label = run_ort(export_qdq(net), np.ldexp(q.astype(np.float64), net.input_exponent), level)
    assert np.array_equal(np.ldexp(logits.astype(np.float64), -e_logits), engine)
    assert np.array_equal(label, engine.argmax(axis=1))
