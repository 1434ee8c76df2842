"""ONNX import (golden.engine.onnx_import): real exporters' graphs become the layer program, float vs int8 agree
closely, and everything the engine cannot run is refused naming the node, its op type and why."""

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pezo.golden.engine.onnx_import import accuracies, float_forward, import_onnx  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from onnx_models import random_mlp, torch_style_mlp  # noqa: E402


def save(model, tmp_path, name="m.onnx"):
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return path


def test_a_torch_style_mlp_imports_to_the_same_layers_and_close_logits(tmp_path):
    weights, biases = random_mlp([16, 24, 8, 4])
    extra = [("Softmax", {"axis": 1})]
    path = save(torch_style_mlp(weights, biases, extra=extra), tmp_path)
    x = np.random.default_rng(1).normal(0, 1, (400, 16))
    net, layers = import_onnx(path, x)
    assert [l.describe() for l in net.config.layers] == ["16 -> 24 + bias relu", "24 -> 8 + bias relu", "8 -> 4 + bias"]
    assert np.allclose(layers[0].weight, weights[0]) and np.allclose(layers[2].bias, biases[2])
    assert net.input_exponent == -5  # max|x| ~ 3.3 <= 127 * 2^-5
    y = float_forward(layers, x).argmax(axis=1)
    report = accuracies(net, layers, x, y)
    assert report["float_accuracy"] == 1.0 and report["int8_accuracy"] >= 0.9


def test_scikit_learn_mlp_on_the_digits_by_skl2onnx_keeps_its_accuracy(tmp_path):
    pytest.importorskip("skl2onnx")
    from skl2onnx import to_onnx
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier

    digits = load_digits()
    x, y = digits.data.astype(np.float32), digits.target
    model = MLPClassifier((32,), max_iter=200, random_state=0).fit(x[:1200], y[:1200])
    path = save(to_onnx(model, x[:1]), tmp_path)  # Cast, MatMul + Add, Relu, ..., Softmax, ArgMax, ZipMap, ...
    net, layers = import_onnx(path, x[:1200])
    report = accuracies(net, layers, x[1200:], y[1200:])
    assert report["float_accuracy"] == pytest.approx(model.score(x[1200:], y[1200:]))
    assert report["int8_accuracy"] >= report["float_accuracy"] - 0.02
    assert net.input_exponent == -2 and net.config.layers[0].bias


def chain(nodes, inits, inputs=("x", 8)):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(inputs[0], TensorProto.FLOAT, ["n", inputs[1]])],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, ["n", "k"])],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float32), k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


W = np.ones((8, 4))


@pytest.mark.parametrize(
    "nodes, inits, message",
    [
        (
            [helper.make_node("Conv", ["x", "w"], ["y"], name="conv1")],
            {"w": np.ones((4, 8, 1))},
            "node 'conv1' (op Conv): a Conv on the input needs a static [N, C, H, W] input shape",  # issue 33
        ),
        (
            [
                helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                helper.make_node("Sigmoid", ["h"], ["s"], name="sig"),
                helper.make_node("MatMul", ["s", "w2"], ["y"], name="mm2"),
            ],
            {"w": W, "w2": np.ones((4, 2))},
            "node 'sig' (op Sigmoid): not supported",
        ),
        (
            [
                helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                helper.make_node("Relu", ["h"], ["r"], name="relu"),
                helper.make_node("MatMul", ["r", "w2"], ["h2"], name="mm2"),
                helper.make_node("Add", ["h2", "r"], ["y"], name="skip"),
            ],
            {"w": W, "w2": np.ones((4, 4))},
            "node 'skip' (op Add): tensor 'r' feeds 2 nodes (mm2 (MatMul), skip (Add)): a branch or residual",
        ),
        (
            [
                helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
                helper.make_node("Relu", ["y"], ["z"], name="r"),
            ],
            {"w": np.ones((8, 2))},
            "must not be followed by a Relu",
        ),
        (
            [helper.make_node("MatMul", ["x", "w"], ["y"], name="wide")],
            {"w": np.ones((8, 5000))},
            "node 'wide': outputs must be in 1..4096",
        ),
        (
            [helper.make_node("MatMul", ["x", "w"], ["y"], name="one")],
            {"w": np.ones((8, 1))},
            "needs at least 2 outputs",
        ),
    ],
)
def test_what_the_engine_cannot_run_is_refused_naming_the_node(nodes, inits, message, tmp_path):
    path = save(chain(nodes, inits), tmp_path)
    with pytest.raises(ValueError) as info:
        import_onnx(path, np.ones((10, 8)))
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_a_branch_is_refused(tmp_path):
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Relu", ["h"], ["a"], name="r1"),
        helper.make_node("Relu", ["h"], ["b"], name="r2"),
        helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=1),
    ]
    with pytest.raises(ValueError, match="feeds 2 nodes .* a branch or residual connection"):
        import_onnx(save(chain(nodes, {"w": W}), tmp_path), np.ones((10, 8)))


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_a_truncated_or_malformed_file_is_refused(cut, tmp_path):
    weights, biases = random_mlp([8, 8, 2])
    data = torch_style_mlp(weights, biases).SerializeToString()
    path = tmp_path / "t.onnx"
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(ValueError, match="is not a valid ONNX model"):
        import_onnx(path, np.ones((10, 8)))
    path.write_bytes(b"not an onnx model at all")
    with pytest.raises(ValueError, match="is not a valid ONNX model"):
        import_onnx(path, np.ones((10, 8)))


def quantized(tmp_path, fmt):
    quantization = pytest.importorskip("onnxruntime.quantization")
    weights, biases = random_mlp([16, 24, 4])
    source = save(torch_style_mlp(weights, biases, extra=[("Softmax", {"axis": 1})]), tmp_path, "float.onnx")
    x = np.random.default_rng(1).normal(0, 1, (200, 16)).astype(np.float32)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"input": x[i : i + 20]} for i in range(0, 200, 20)])

        def get_next(self):
            return next(self.batches, None)

    target = tmp_path / f"{fmt}.onnx"
    quantization.quantize_static(
        str(source),
        str(target),
        Reader(),
        quant_format=getattr(quantization.QuantFormat, fmt),
        activation_type=quantization.QuantType.QInt8,
        weight_type=quantization.QuantType.QInt8,
    )
    return source, target, x


def test_a_qdq_model_by_onnxruntime_quantization_imports_as_its_float_model(tmp_path):
    source, target, x = quantized(tmp_path, "QDQ")  # Gemm's ReLU folded into a zero point of -128
    ref, ref_layers = import_onnx(source, x)
    net, layers = import_onnx(target, x)
    assert [l.describe() for l in net.config.layers] == [l.describe() for l in ref.config.layers]
    assert np.abs(layers[0].weight - ref_layers[0].weight).max() < 0.02
    y = float_forward(ref_layers, x).argmax(axis=1)
    assert accuracies(net, layers, x, y)["int8_accuracy"] >= 0.9


def test_a_qoperator_model_is_refused_naming_the_node(tmp_path):
    _, target, x = quantized(tmp_path, "QOperator")
    with pytest.raises(ValueError, match=r"\(op Q\w+\): a QOperator-quantised model: give the float model"):
        import_onnx(target, x)


def test_a_torch_style_cnn_imports_with_its_pools_and_close_logits(tmp_path):
    from onnx_models import random_cnn, torch_style_cnn

    convs, fcs = random_cnn()
    path = save(torch_style_cnn(convs, fcs), tmp_path)
    x = np.random.default_rng(1).uniform(-1, 1, (300, 1, 8, 8))
    net, layers = import_onnx(path, x)
    assert [l.describe() for l in net.config.layers] == [
        "conv3x3/1 pad 1 64 -> 4x4x4 + bias relu maxpool",
        "conv3x3/1 pad 1 64 -> 8x2x2 + bias relu maxpool",
        "32 -> 16 + bias relu",
        "16 -> 10 + bias",
    ]
    assert np.allclose(layers[0].weight, convs[0][0].reshape(4, 9))  # 1 channel: (ci, ky, kx) = (ky, kx, ci)
    assert net.config.array.cols == 4  # layer 1 reads 4 channels per pixel: one activation word of 4 lanes
    y = float_forward(layers, x).argmax(axis=1)
    report = accuracies(net, layers, x, y)
    assert report["float_accuracy"] == 1.0 and report["int8_accuracy"] >= 0.9


def test_a_multichannel_cnn_imports_in_the_engine_layout_and_runs_as_onnxruntime(tmp_path):
    """Issue 33's layout: kernels as (ky, kx, ci) rows, the dense layer's columns over the HWC flattening, the input
    channel-major as given -- the float layers compute the ONNX model's function."""
    ort = pytest.importorskip("onnxruntime")
    from onnx_models import random_cnn, torch_style_cnn

    from pezo.golden.engine.conv import hwc_order, kernel_rows

    convs, fcs = random_cnn(channels=(2, 8, 16), dense=(64, 16, 10))
    path = save(torch_style_cnn(convs, fcs, image=(2, 8, 8)), tmp_path)
    x = np.random.default_rng(1).uniform(-1, 1, (200, 2, 8, 8))
    net, layers = import_onnx(path, x)
    assert net.config.array.cols == 8 and [l.weight.shape for l in layers[:2]] == [(8, 18), (16, 72)]
    assert np.allclose(layers[1].weight, kernel_rows(convs[1][0]))
    assert np.allclose(layers[2].weight, fcs[0][0][:, hwc_order(16, 2, 2)])
    expected = ort.InferenceSession(str(path)).run(None, {"input": x.astype(np.float32)})[0]
    assert np.allclose(float_forward(layers, x), expected, atol=1e-4)
    report = accuracies(net, layers, x.reshape(200, -1), expected.argmax(axis=1))
    assert report["int8_accuracy"] >= 0.9


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"strides": 3}, "node '/conv0/Conv' \\(op Conv\\): conv 3x3/3 .*stride must be one of 1, 2, got 3"),
        ({"pads": 2}, "node '/conv0/Conv' \\(op Conv\\): conv .*padding must be an integer in 0..1"),
        ({"image": (1, 6, 6)}, "node '/pool1/MaxPool' \\(op MaxPool\\): conv .*needs an even output size, got 3x3"),
        ({"k": 9, "pads": 0}, "node '/conv0/Conv' \\(op Conv\\): conv 9x9.*kernel must be in 1..7"),
        (
            {"k": 7, "pads": 0, "image": (1, 6, 6)},
            "node '/conv0/Conv' \\(op Conv\\): conv .*a 7x7 kernel is larger than the",
        ),
    ],
)
def test_cnn_refusals_name_the_node(kwargs, needle, tmp_path):
    from onnx_models import random_cnn, torch_style_cnn

    k = kwargs.pop("k", 3)
    image = kwargs.pop("image", (1, 8, 8))
    convs, fcs = random_cnn(k=k)
    path = save(torch_style_cnn(convs, fcs, image=image, **kwargs), tmp_path)
    with pytest.raises(ValueError, match=needle):
        import_onnx(path, np.zeros((4, int(np.prod(image)))))
