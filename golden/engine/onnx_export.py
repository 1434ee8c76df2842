"""ONNX export of an int8 network (a ``NetFile`` with weights) in QDQ form: onnxruntime runs it on the same float
input the network was imported from (or its data was quantised from) and gives the engine's logits.

**Graph** (opset 17): input ``input`` float [batch, inputs] -> ``QuantizeLinear`` (scale 2^input_exponent,
zero point int8 0: round half to even, ``pezo.golden.engine.calibration``'s rule) -> ``DequantizeLinear``; per
layer: the int8 weights as an initializer -> ``DequantizeLinear`` (scale 2^weight_exponent) -> ``Gemm``
(transB = 1) with the int32 bias through ``DequantizeLinear``; a hidden layer then ``Relu`` (or ``Clip`` at -127 LSB
without one) -> ``QuantizeLinear`` / ``DequantizeLinear`` at the layer's output exponent (accumulator exponent +
``shift``). Outputs: ``logits`` (float, = the engine's int32 logits x 2^exponent) and ``label`` (``ArgMax``).
A conv layer (``golden.engine.conv``) is a ``Conv`` on NCHW tensors (a ``Reshape`` of the channel-major input
first) with its rows turned back into [out, in, kh, kw] kernels (``kernel_tensor``), then the 2 x 2 pool; the dense
layer after it gets a ``Flatten`` and its columns permuted from the engine's HWC flattening back to NCHW's (the
inverse of the import's ``hwc_order``), so the model is a plain NCHW CNN.

**Exactness**: every float in the graph is an integer times a power of two, so float32 products and sums are
exact while an accumulator stays below 2^23 (``exact_in_float32``). The engine rounds its shifts half up,
``QuantizeLinear`` half to even: a hidden layer with ``shift`` >= 1 adds half an accumulator LSB (an ``Add``
named ``layer<i>/RoundHalfUp``) before its quantisation, which turns every tie into a round-up and moves nothing
else (the next representable value is a whole LSB away). The biases are int32 at the accumulator's scale (the
standard QDQ form: onnxruntime may fuse a layer into its integer ``QGemm``, which computes the same integers).
So ``logits`` are the engine's and ``label`` its argmax, bit for bit, at every graph optimisation level.
"""

from __future__ import annotations

import numpy as np

from pezo.golden.engine.conv import hwc_order, kernel_tensor
from pezo.golden.engine.int8 import ACT_MAX, WEIGHT_MAX, WEIGHT_MIN
from pezo.golden.engine.net_file import NetFile, write_whole

OPSET = 17
FLOAT32_EXACT = 1 << 23


def exact_in_float32(net: NetFile) -> bool:
    """Whether every accumulator (plus the half-LSB of the rounding) stays below 2^23: float32 is then exact."""
    for layer, b in zip(net.config.layers, net.biases or (None,) * len(net.config.layers)):
        peak = layer.acc_length * WEIGHT_MAX * -(-ACT_MAX - 1) + (int(np.abs(b).max()) if b is not None else 0)
        if 2 * peak + 1 >= 2 * FLOAT32_EXACT:
            return False
    return True


def export_qdq(net: NetFile):
    """The QDQ ``onnx.ModelProto`` of ``net`` (module docstring); ValueError if it has no weights or no
    input exponent."""
    from onnx import TensorProto, helper, numpy_helper

    if net.weights is None:
        raise ValueError(f"network {net.name!r} has no weights to export (train it or import a model first)")
    if net.input_exponent is None:
        raise ValueError(f"network {net.name!r} has no input_exponent: the exported model cannot quantise its input")
    inits, nodes = [], []

    def const(name, value, dtype):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def qdq(x: str, exponent: int, tag: str) -> str:
        scale = const(f"{tag}.scale", np.float32(2.0**exponent), np.float32)
        zero = const(f"{tag}.zero_point", 0, np.int8)
        nodes.append(helper.make_node("QuantizeLinear", [x, scale, zero], [f"{tag}.q"], name=f"{tag}/Quantize"))
        nodes.append(helper.make_node("DequantizeLinear", [f"{tag}.q", scale, zero], [tag], name=f"{tag}/Dequantize"))
        return tag

    current = qdq("input", net.input_exponent, "input_q")
    s_in = net.input_exponent
    last = len(net.config.layers) - 1
    biases = net.biases or (None,) * (last + 1)
    image = False  # whether ``current`` is [batch, C, H, W]
    for i, (layer, w, b) in enumerate(zip(net.config.layers, net.weights, biases)):
        e_acc = s_in + layer.weight_exponent
        w = np.asarray(w, dtype=np.int64).clip(WEIGHT_MIN, WEIGHT_MAX)
        conv = layer.kind == "conv"
        if conv:
            w = kernel_tensor(w, layer)
            if not image:
                current, image = _to_image(nodes, const, current, layer, i), True
        elif image:
            previous = net.config.layers[i - 1]
            w = w[:, np.argsort(hwc_order(*previous.out_shape))]  # the engine's HWC columns -> NCHW Flatten's
            nodes.append(helper.make_node("Flatten", [current], [f"layer{i}.in"], name=f"layer{i}/Flatten", axis=1))
            current, image = f"layer{i}.in", False
        w_name = const(f"layer{i}.weight", w, np.int8)
        w_scale = const(f"layer{i}.weight.scale", np.float32(2.0**layer.weight_exponent), np.float32)
        w_zero = const(f"layer{i}.weight.zero_point", 0, np.int8)
        nodes.append(helper.make_node("DequantizeLinear", [w_name, w_scale, w_zero], [f"layer{i}.w"]))
        bias = np.zeros(layer.bias_size, dtype=np.int64) if b is None else np.asarray(b, dtype=np.int64)
        b_name = const(f"layer{i}.bias", bias, np.int32)
        b_scale = const(f"layer{i}.bias.scale", np.float32(2.0**e_acc), np.float32)
        b_zero = const(f"layer{i}.bias.zero_point", 0, np.int32)
        nodes.append(helper.make_node("DequantizeLinear", [b_name, b_scale, b_zero], [f"layer{i}.b"]))
        out = f"layer{i}.acc" if i < last else "logits"
        if conv:
            nodes.append(
                helper.make_node(
                    "Conv",
                    [current, f"layer{i}.w", f"layer{i}.b"],
                    [out],
                    name=f"layer{i}/Conv",
                    kernel_shape=[layer.kernel] * 2,
                    strides=[layer.stride] * 2,
                    pads=[layer.padding] * 4,
                )
            )
        else:
            nodes.append(
                helper.make_node(
                    "Gemm", [current, f"layer{i}.w", f"layer{i}.b"], [out], name=f"layer{i}/Gemm", transB=1
                )
            )
        if i == last:
            break
        if layer.shift >= 1:  # half an accumulator LSB: QuantizeLinear's ties then round up, as the engine's shift
            half = const(f"layer{i}.round_half_up", np.float32(2.0 ** (e_acc - 1)), np.float32)
            nodes.append(helper.make_node("Add", [out, half], [f"layer{i}.acc_r"], name=f"layer{i}/RoundHalfUp"))
            out = f"layer{i}.acc_r"
        s_out = e_acc + layer.shift
        if layer.relu:
            nodes.append(helper.make_node("Relu", [out], [f"layer{i}.act"], name=f"layer{i}/Relu"))
        else:
            lo = const(f"layer{i}.clip_min", np.float32(WEIGHT_MIN * 2.0**s_out), np.float32)
            nodes.append(helper.make_node("Clip", [out, lo], [f"layer{i}.act"], name=f"layer{i}/Clip"))
        current = qdq(f"layer{i}.act", s_out, f"layer{i}.out")
        if conv and layer.pool != "none":
            current = _pool(nodes, const, layer.pool, current, s_out, f"layer{i}", qdq)
        s_in = s_out
    nodes.append(helper.make_node("ArgMax", ["logits"], ["label"], name="label/ArgMax", axis=1, keepdims=0))
    graph = helper.make_graph(
        nodes,
        net.name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", net.config.inputs])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", net.config.outputs]),
            helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="pezo")
    model.ir_version = 8
    model.doc_string = f"pezo int8 network {net.name} (QDQ); {net.source}".strip("; ")
    return model


def _to_image(nodes, const, current: str, layer, i: int) -> str:
    """``current`` [batch, features] as the NCHW tensor conv layer ``i`` reads: the channel-major network input
    reshaped (layer 0), or a dense layer's output, which the engine reads HWC, reshaped and transposed."""
    from onnx import helper

    c, h, w = layer.in_channels, layer.height, layer.width
    shape = [-1, c, h, w] if i == 0 else [-1, h, w, c]
    shape = const(f"layer{i}.image_shape", shape, np.int64)
    nodes.append(helper.make_node("Reshape", [current, shape], [f"layer{i}.in"], name=f"layer{i}/Reshape"))
    if i == 0:
        return f"layer{i}.in"
    nodes.append(
        helper.make_node(
            "Transpose", [f"layer{i}.in"], [f"layer{i}.nchw"], name=f"layer{i}/Transpose", perm=[0, 3, 1, 2]
        )
    )
    return f"layer{i}.nchw"


def _pool(nodes, const, kind: str, current: str, exponent: int, tag: str, qdq) -> str:
    """The 2 x 2 pool of a conv layer's quantised output: ``MaxPool`` (exact on the grid), or ``AveragePool`` plus
    an eighth of an LSB before a QDQ at the same exponent (the quarters 0, 1/4, 1/2, 3/4 then round as
    ``round_shift(sum, 2)``, half up, under QuantizeLinear's half-to-even)."""
    from onnx import helper

    op = "MaxPool" if kind == "max" else "AveragePool"
    nodes.append(
        helper.make_node(op, [current], [f"{tag}.pool"], name=f"{tag}/{op}", kernel_shape=[2, 2], strides=[2, 2])
    )
    if kind == "max":
        return f"{tag}.pool"
    eighth = const(f"{tag}.pool_round", np.float32(2.0 ** (exponent - 3)), np.float32)
    nodes.append(helper.make_node("Add", [f"{tag}.pool", eighth], [f"{tag}.pool_r"], name=f"{tag}/PoolRoundHalfUp"))
    return qdq(f"{tag}.pool_r", exponent, f"{tag}.pooled")


def write_onnx(net: NetFile, path) -> None:
    """``export_qdq(net)`` written to ``path`` whole or not at all."""
    write_whole(path, export_qdq(net).SerializeToString())
