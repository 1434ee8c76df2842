"""ONNX import: a float ONNX model of dense layers -> the engine's layer program (``NetConfig``) with int8 weights.

**Supported graph**: one float input [batch, features] (or [batch, ...] flattened), then a chain of
``Gemm`` (transA = 0; any transB, alpha, beta) or ``MatMul`` with a constant weight, optionally followed by
``Add`` of a constant bias, each optionally followed by ``Relu``; ``Flatten``, ``Reshape`` to [batch, features],
``Cast`` to float, ``Identity`` and ``Dropout`` (inference: the identity) pass through. After the last dense layer,
the ops classifier exporters append to turn logits into labels or probabilities -- ``Softmax``, ``LogSoftmax``,
``ArgMax``, ``ZipMap``, ``Cast``, ``Identity``, ``ArrayFeatureExtractor``, ``Reshape``, ``Flatten`` -- are
recognised as the output and not run on chip (the engine's logits are the last layer's accumulators; their
argmax is the class index). **QDQ models** (``onnxruntime.quantization`` with ``QuantFormat.QDQ``): a
``DequantizeLinear`` of constants is the float weight or bias it stands for; a ``QuantizeLinear`` /
``DequantizeLinear`` pair on an activation passes through (a zero point at the type's minimum after a dense
layer is the ReLU the quantiser folded into the range); the model is then re-quantised by this module's rule
(its own scales are not kept). QOperator models (``QLinearMatMul``, ``QGemm``, ...) are refused.

Anything else is refused with one line naming the node, its op type and why: another
op, a tensor feeding two nodes (a residual branch), an ``Add`` of two activations, a non-constant weight, a ReLU
on the logits, or a layer the engine cannot hold (widths, tiling, the int32 accumulator: ``NetConfig``'s checks).

**Quantisation** (``pezo.golden.engine.calibration``'s power-of-two rule, calibrated on the user's training
data ``x_train``): the inputs' exponent s_0 = pow2_exponent(x_train); layer l's weights get
e_w = pow2_exponent(W_l) and q = sat(rint(W / 2^e_w), -127, 127) (its ``weight_exponent``); its bias the
accumulator's exponent s_l + e_w, q_b = rint(b / 2^(s_l + e_w)) (int32); a hidden layer's output exponent
s_(l+1) = pow2_exponent of the float model's activations after the layer (and its ReLU) on ``x_train``, so its
requantisation ``shift`` = s_(l+1) - s_l - e_w (clamped to 0 when the activations need less than the
accumulator's resolution; more than 31 is refused). The logits stay int32 at s_L + e_w.

**Convolutions** (``Conv``, then optionally ``Relu`` and a 2 x 2 ``MaxPool`` / ``AveragePool``, before the dense
layers): the engine's layout (``golden.engine.conv``) is taken at import -- a kernel [out, in, kh, kw] becomes the
weight row in the lane order (ky, kx, ci) (``kernel_rows``), and the dense layer after the last convolution, which
ONNX feeds with the NCHW ``Flatten``, gets its columns permuted to the engine's HWC flattening (``hwc_order``). The
model's input stays as given (channel-major [c, y, x] flattened). ``FloatLayer`` and ``float_forward`` hold and run
the model in this layout (the same function as the ONNX graph).

**Columns**: the imported network's array width ``cols`` is the largest of 8, 4, 2, 1 that divides every dense
layer's inputs and every later conv layer's ``in_channels`` (written to the network file when it is not the
default 8).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pezo.golden.engine.calibration import pow2_exponent, quantize_rint
from pezo.golden.engine.conv import Conv2D, float_conv, hwc_order, kernel_rows
from pezo.golden.engine.int8 import SHIFT_RANGE, WEIGHT_MAX, WEIGHT_MIN
from pezo.golden.engine.net_file import NetFile
from pezo.golden.engine.network import Layer, NetConfig, forward_network

PASS_THROUGH = ("Flatten", "Reshape", "Cast", "Identity", "Dropout")
OUTPUT_OPS = ("Softmax", "LogSoftmax", "ArgMax", "ZipMap", "Cast", "Identity", "ArrayFeatureExtractor")
OUTPUT_OPS += ("Reshape", "Flatten", "QuantizeLinear", "DequantizeLinear")
QOPERATOR_OPS = ("QLinearMatMul", "QGemm", "MatMulInteger", "QLinearConv", "ConvInteger", "DynamicQuantizeLinear")
DENSE_OPS = ("Gemm", "MatMul")
POOL_OPS = {"MaxPool": "max", "AveragePool": "avg"}
SUPPORTED_OPS = tuple(dict.fromkeys(DENSE_OPS + ("Conv", "Add", "Relu") + tuple(POOL_OPS) + PASS_THROUGH + OUTPUT_OPS))
FLOAT_TYPES = (1, 10, 11, 16)  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16


@dataclass
class FloatLayer:
    """One layer of the float model in the engine's layout (module docstring): ``weight`` [outputs, inputs] (a
    convolution's [out_channels, k^2 * in_channels], lanes (ky, kx, ci); a dense layer after a convolution over its
    HWC flattening), ``bias`` [outputs] (per output channel) or None, ``relu``, the node that made it, and for a
    convolution its geometry ``conv`` (a ``Conv2D`` whose ``relu`` and ``pool`` follow the graph)."""

    weight: np.ndarray
    bias: np.ndarray | None
    relu: bool
    node: str
    conv: Conv2D | None = None


def _refuse(node, why: str) -> ValueError:
    return ValueError(f"node {node.name or '(unnamed)'!r} (op {node.op_type}): {why}")


def load_onnx(path):
    """The ``onnx.ModelProto`` of ``path``; one ValueError line for a missing, malformed or truncated file."""
    import onnx

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"ONNX file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    try:
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model)
    except Exception as exc:  # protobuf's DecodeError, onnx's ValidationError: both mean "not a usable model"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"ONNX file {str(path)!r} is not a valid ONNX model (malformed or truncated): {first}"
        ) from None
    if not model.graph.node:
        raise ValueError(f"ONNX file {str(path)!r} has an empty graph")
    return model


def _constants(graph) -> dict:
    """Initializers, ``Constant`` outputs and ``DequantizeLinear`` of constants (a QDQ model's weights and
    biases: (q - zero_point) * scale, per tensor or per channel along ``axis``) as float arrays."""
    from onnx import numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    values[node.output[0]] = numpy_helper.to_array(attr.t)
        elif node.op_type == "DequantizeLinear" and all(n in values for n in node.input if n):
            q = np.asarray(values[node.input[0]], dtype=np.float64)
            scale = np.asarray(values[node.input[1]], dtype=np.float64)
            zero = np.asarray(values[node.input[2]], dtype=np.float64) if len(node.input) > 2 and node.input[2] else 0.0
            if scale.ndim == 1 and q.ndim > 1:  # per channel
                shape = [1] * q.ndim
                shape[_attrs(node).get("axis", 1)] = -1
                scale, zero = scale.reshape(shape), np.reshape(zero, shape) if np.ndim(zero) else zero
            values[node.output[0]] = (q - zero) * scale
    return values


def _qdq_pair(node, consumers, consts):
    """A ``QuantizeLinear`` on an activation and its ``DequantizeLinear``: (the pair's output, whether it clamps
    at zero -- a zero point at the type's minimum, how quantisers fold a ReLU into the activation's range)."""
    users = consumers.get(node.output[0], [])
    if len(users) != 1 or users[0].op_type != "DequantizeLinear":
        raise _refuse(node, "a QuantizeLinear on an activation must be followed by one DequantizeLinear (QDQ form)")
    zero = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    clamps = (
        zero is not None and zero.dtype.kind in "iu" and int(np.asarray(zero).ravel()[0]) == np.iinfo(zero.dtype).min
    )
    return users[0].output[0], clamps


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def float_layers(model) -> list[FloatLayer]:
    """The float dense layers of ``model`` (module docstring's supported graph); ValueError naming the node
    otherwise."""
    graph = model.graph
    consts = _constants(graph)
    inputs = [i for i in graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise ValueError(f"the model must have one input (the features), got {len(inputs)}: {[i.name for i in inputs]}")
    if inputs[0].type.tensor_type.elem_type not in FLOAT_TYPES:
        raise ValueError(
            f"input {inputs[0].name!r} must be a float tensor (a float model; QDQ import is not supported)"
        )
    for node in graph.node:
        if node.op_type in QOPERATOR_OPS:
            raise _refuse(
                node,
                "a QOperator-quantised model: give the float model, or quantise it in QDQ form "
                "(onnxruntime.quantization with QuantFormat.QDQ)",
            )
    nodes = [n for n in graph.node if n.op_type != "Constant" and not (n.output and n.output[0] in consts)]
    consumers: dict[str, list] = {}
    for node in nodes:
        for name in node.input:
            if name and name not in consts:
                consumers.setdefault(name, []).append(node)
    current, layers = inputs[0].name, []
    while True:
        users = consumers.get(current, [])
        if not users:
            break
        if len(users) > 1:
            if layers and all(u.op_type in OUTPUT_OPS for u in users):
                _check_output_tail(users, consumers, layers)
                break
            names = ", ".join(f"{u.name or '(unnamed)'} ({u.op_type})" for u in users)
            raise _refuse(
                next((u for u in users if u.op_type not in OUTPUT_OPS + DENSE_OPS), users[-1]),
                f"tensor {current!r} feeds {len(users)} nodes ({names}): a branch or residual connection; the engine "
                "runs one chain of dense layers",
            )
        node = users[0]
        op = node.op_type
        if op in DENSE_OPS:
            layers.append(_after_conv(_dense(node, consts), layers))
            current = node.output[0]
            nxt = consumers.get(current, [])
            if len(nxt) == 1 and nxt[0].op_type == "Add" and op == "MatMul":
                add = nxt[0]
                bias = [consts[n] for n in add.input if n != current and n in consts]
                if len(bias) != 1 or len([n for n in add.input if n not in consts]) != 1:
                    raise _refuse(add, "adds two activations (a residual branch): only a constant bias may be added")
                layers[-1].bias = _bias(add, bias[0], layers[-1].weight.shape[0])
                current = add.output[0]
            continue
        if op == "Conv":
            layers.append(_conv(node, consts, _image_shape(inputs[0], layers, node)))
            current = node.output[0]
            continue
        if op in POOL_OPS:
            _pool(node, layers)
            current = node.output[0]
            continue
        if op == "Relu":
            if not layers or layers[-1].relu:
                raise _refuse(node, "a ReLU must follow a dense or conv layer (Gemm, MatMul + Add, Conv)")
            if layers[-1].conv is not None and layers[-1].conv.pool == "avg":
                raise _refuse(node, "a ReLU after an AveragePool: the engine applies the ReLU before the pool")
            _set_relu(layers[-1])
            current = node.output[0]
            continue
        if op == "Add":
            raise _refuse(node, "an Add that is not the bias of a MatMul (a residual branch or a shifted input)")
        if op == "QuantizeLinear" and not _ends_chain(node, consumers):
            current, clamps = _qdq_pair(node, consumers, consts)
            if clamps and layers and not layers[-1].relu and layers[-1].node == _producer(nodes, node.input[0]):
                _set_relu(layers[-1])  # the quantiser folded the ReLU into the range (zero point at the minimum)
            continue
        if op in PASS_THROUGH and not _ends_chain(node, consumers):
            _check_pass_through(node, consts)
            current = node.output[0]
            continue
        if op in OUTPUT_OPS and layers:
            _check_output_tail([node], consumers, layers)
            break
        raise _refuse(
            node,
            f"not supported: the engine runs {', '.join(DENSE_OPS)} (+ Add), Conv, MaxPool/AveragePool 2x2, Relu, "
            "Flatten/Reshape; after the last "
            f"layer {', '.join(dict.fromkeys(OUTPUT_OPS))} are recognised as the output",
        )
    if not layers:
        raise ValueError("the model has no dense layer (Gemm or MatMul) on its input")
    if layers[-1].conv is not None:
        raise ValueError(
            f"node {layers[-1].node!r}: the last layer gives the logits and must be dense (Gemm or MatMul)"
        )
    if layers[-1].relu:
        raise ValueError(
            f"node {layers[-1].node!r}: the last dense layer gives the logits and must not be followed by a Relu"
        )
    return layers


def _set_relu(layer: FloatLayer) -> None:
    layer.relu = True
    if layer.conv is not None:
        layer.conv = dataclasses.replace(layer.conv, relu=True)


def _image_shape(graph_input, layers: list[FloatLayer], node) -> tuple[int, int, int]:
    """[channels, height, width] a Conv reads: the previous conv layer's output, or the model input's static
    [N, C, H, W] shape."""
    if layers:
        if layers[-1].conv is None:
            raise _refuse(node, "a Conv after a dense layer: the engine's convolutions come before its dense layers")
        return layers[-1].conv.out_shape
    dims = [d.dim_value if d.HasField("dim_value") else 0 for d in graph_input.type.tensor_type.shape.dim]
    if len(dims) != 4 or 0 in dims[1:]:
        raise _refuse(node, f"a Conv on the input needs a static [N, C, H, W] input shape, got {dims}")
    return tuple(dims[1:])


def _conv(node, consts, shape) -> FloatLayer:
    """A Conv node (square kernel, stride 1 or 2, symmetric zero padding, no dilation or groups) as a layer."""
    attrs = _attrs(node)
    name = node.input[1]
    if name not in consts:
        raise _refuse(node, f"its weight {name!r} is not a constant (an initializer): the engine stores weights")
    w = np.asarray(consts[name], dtype=np.float64)
    if w.ndim != 4 or w.shape[2] != w.shape[3] or w.shape[1] != shape[0]:
        raise _refuse(node, f"its weight must be [out, {shape[0]}, k, k] (a square kernel), got {list(w.shape)}")
    k = w.shape[2]
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    strides = list(attrs.get("strides", [1, 1]))
    if attrs.get("group", 1) != 1 or any(d != 1 for d in attrs.get("dilations", [1, 1])):
        raise _refuse(node, "grouped or dilated convolution: the address generator reads dense k x k patches")
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise _refuse(node, "auto_pad: give explicit pads")
    if len(set(pads)) != 1 or len(set(strides)) != 1:
        raise _refuse(node, f"pads {pads} and strides {strides} must be the same on every side and axis")
    if not np.all(np.isfinite(w)):
        raise _refuse(node, f"its weight {name!r} holds NaN or inf")
    try:
        geometry = Conv2D(*shape, w.shape[0], kernel=k, stride=strides[0], padding=pads[0])
    except ValueError as exc:
        raise _refuse(node, str(exc)) from None
    bias = None
    if len(node.input) > 2 and node.input[2]:
        if node.input[2] not in consts:
            raise _refuse(node, "its bias B is not a constant")
        bias = _bias(node, consts[node.input[2]], w.shape[0])
    return FloatLayer(kernel_rows(w), bias, False, node.name, geometry)


def _after_conv(layer: FloatLayer, layers: list[FloatLayer]) -> FloatLayer:
    """A dense layer after a convolution with its columns over the NCHW ``Flatten`` permuted to the engine's HWC
    flattening (``hwc_order``); other dense layers, or a width that does not match (refused later), as given."""
    conv = layers[-1].conv if layers else None
    if conv is not None and layer.weight.shape[1] == conv.outputs:
        layer.weight = layer.weight[:, hwc_order(*conv.out_shape)]
    return layer


def _pool(node, layers: list[FloatLayer]) -> None:
    """A 2 x 2 MaxPool / AveragePool (stride 2, no padding) folded into the conv layer before it."""
    attrs = _attrs(node)
    conv = layers[-1].conv if layers else None
    if conv is None or conv.pool != "none":
        raise _refuse(node, "a pool must follow a Conv (and its Relu) directly")
    if list(attrs.get("kernel_shape", [])) != [2, 2] or list(attrs.get("strides", [1, 1])) != [2, 2]:
        raise _refuse(node, "only a 2x2 pool with strides [2, 2] is supported")
    if any(attrs.get("pads", [0, 0, 0, 0])) or attrs.get("ceil_mode", 0) or attrs.get("dilations", [1, 1]) != [1, 1]:
        raise _refuse(node, "a pool with pads, ceil_mode or dilations is not supported")
    try:
        layers[-1].conv = dataclasses.replace(conv, pool=POOL_OPS[node.op_type])
    except ValueError as exc:
        raise _refuse(node, str(exc)) from None


def _producer(nodes, tensor: str) -> str | None:
    """The name of the dense node whose output (or bias Add's output) is ``tensor``."""
    for i, node in enumerate(nodes):
        if tensor in node.output:
            if node.op_type == "Add" and i and nodes[i - 1].op_type == "MatMul":
                return nodes[i - 1].name
            return node.name
    return None


def _ends_chain(node, consumers) -> bool:
    """Whether nothing after ``node`` is a dense layer (then it is part of the output, not a pass-through)."""
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        for out in n.output:
            for user in consumers.get(out, []):
                if user.op_type in DENSE_OPS or user.op_type in ("Relu", "Conv") or user.op_type in POOL_OPS:
                    return False
                if id(user) not in seen:
                    seen.add(id(user))
                    todo.append(user)
    return True


def _check_output_tail(users, consumers, layers) -> None:
    todo, seen = list(users), set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.op_type not in OUTPUT_OPS:
            raise _refuse(
                node,
                f"not supported after the last dense layer (only {', '.join(dict.fromkeys(OUTPUT_OPS))}, which "
                "turn logits into labels or probabilities, are recognised as the output)",
            )
        for out in node.output:
            todo.extend(consumers.get(out, []))


def _check_pass_through(node, consts) -> None:
    attrs = _attrs(node)
    if node.op_type == "Flatten" and attrs.get("axis", 1) != 1:
        raise _refuse(node, f"Flatten with axis={attrs['axis']}: only axis=1 (keep the batch) is supported")
    if node.op_type == "Reshape":
        shape = consts.get(node.input[1]) if len(node.input) > 1 else None
        if shape is None or np.asarray(shape).size != 2:
            raise _refuse(node, "Reshape must have a constant 2-D target shape [batch, features]")
    if node.op_type == "Cast" and attrs.get("to") not in FLOAT_TYPES:
        raise _refuse(node, "a Cast before the layers must be to a float type")


def _weight(node, consts, name) -> np.ndarray:
    if name not in consts:
        raise _refuse(node, f"its weight {name!r} is not a constant (an initializer): the engine stores weights")
    w = np.asarray(consts[name], dtype=np.float64)
    if w.ndim != 2:
        raise _refuse(node, f"its weight {name!r} must be a 2-D matrix, got shape {list(w.shape)}")
    if not np.all(np.isfinite(w)):
        raise _refuse(node, f"its weight {name!r} holds NaN or inf")
    return w


def _bias(node, b, outputs: int) -> np.ndarray:
    b = np.asarray(b, dtype=np.float64)
    if b.size == 1:
        b = np.full(outputs, float(b.ravel()[0]))
    b = b.reshape(-1) if b.size == outputs and b.squeeze().ndim <= 1 else None
    if b is None:
        raise _refuse(node, f"its bias must hold one value per output ({outputs})")
    if not np.all(np.isfinite(b)):
        raise _refuse(node, "its bias holds NaN or inf")
    return b


def _dense(node, consts) -> FloatLayer:
    if node.op_type == "MatMul":
        return FloatLayer(_weight(node, consts, node.input[1]).T.copy(), None, False, node.name)
    attrs = _attrs(node)
    if attrs.get("transA", 0):
        raise _refuse(node, "Gemm with transA=1 (the batch must be the first axis)")
    b = _weight(node, consts, node.input[1])
    w = attrs.get("alpha", 1.0) * (b if attrs.get("transB", 0) else b.T)
    bias = None
    if len(node.input) > 2 and node.input[2]:
        if node.input[2] not in consts:
            raise _refuse(node, "its bias C is not a constant")
        bias = _bias(node, attrs.get("beta", 1.0) * np.asarray(consts[node.input[2]], dtype=np.float64), w.shape[0])
    return FloatLayer(np.ascontiguousarray(w), bias, False, node.name)


def float_forward(layers: list[FloatLayer], x, upto: int | None = None) -> np.ndarray:
    """The float model's output (logits) on ``x``, or the activation after layer ``upto`` (its ReLU included)."""
    h = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    for i, layer in enumerate(layers):
        if layer.conv is not None:  # its ReLU and pool included
            h = float_conv(h, layer.conv, layer.weight, layer.bias, from_batch=i == 0)
        else:
            h = h @ layer.weight.T + (layer.bias if layer.bias is not None else 0.0)
        if layer.relu and layer.conv is None:
            h = np.maximum(h, 0.0)
        if i == upto:
            return h
    return h


def choose_cols(widths) -> int:
    """The largest of 8, 4, 2, 1 dividing every width."""
    return next(c for c in (8, 4, 2, 1) if all(w % c == 0 for w in widths))


def quantize_layers(layers: list[FloatLayer], x_train, name: str, source: str = "") -> NetFile:
    """The int8 ``NetFile`` of the float layers, calibrated on ``x_train`` (module docstring's rule)."""
    x_train = np.asarray(x_train, dtype=np.float64).reshape(len(x_train), -1)
    first = layers[0].conv.inputs if layers[0].conv is not None else layers[0].weight.shape[1]
    if x_train.shape[1] != first:
        raise ValueError(
            f"the data has {x_train.shape[1]} features, the model's first layer ({layers[0].node!r}) takes "
            f"{first} inputs"
        )
    s_in = pow2_exponent(x_train)
    first_input = s_in
    out_layers, weights, biases = [], [], []
    last = len(layers) - 1
    for i, fl in enumerate(layers):
        e_w = pow2_exponent(fl.weight)
        w_q = quantize_rint(fl.weight, e_w, WEIGHT_MIN, WEIGHT_MAX)
        e_acc = s_in + e_w
        shift = 0
        if i < last:
            s_out = pow2_exponent(float_forward(layers, x_train, upto=i))
            shift = max(s_out - e_acc, 0)
            if shift > SHIFT_RANGE[1]:
                raise ValueError(
                    f"node {fl.node!r}: its requantisation shift would be {shift} (the engine's range is "
                    f"{SHIFT_RANGE[0]}..{SHIFT_RANGE[1]}): the activations are far coarser than weights x inputs"
                )
        b_q = None
        if fl.bias is not None:
            b_q = np.rint(np.ldexp(fl.bias, -e_acc)).astype(np.int64)
        try:
            if fl.conv is not None:
                layer = dataclasses.replace(fl.conv, shift=shift, bias=fl.bias is not None, weight_exponent=e_w)
            else:
                layer = Layer(
                    int(fl.weight.shape[1]),
                    int(fl.weight.shape[0]),
                    shift=shift,
                    relu=fl.relu,
                    bias=fl.bias is not None,
                    weight_exponent=e_w,
                )
        except ValueError as exc:
            raise ValueError(f"node {fl.node!r}: {exc}") from None
        out_layers.append(layer)
        weights.append(w_q)
        biases.append(b_q)
        s_in = e_acc + shift
    widths = [l.inputs for l in out_layers if l.kind == "dense"]  # a conv layer 0's rows are padded to any C
    widths += [l.in_channels for l in out_layers[1:] if l.kind == "conv"]  # one activation word: C channels
    cols = choose_cols(widths)
    settings = {"cols": cols} if cols != 8 else {}
    try:
        config = NetConfig.from_dict({"layers": tuple(out_layers), "name": name, **settings})
    except ValueError as exc:
        raise ValueError(f"the model does not fit the engine: {exc}") from None
    net = NetFile(config, settings, first_input, tuple(config.fit_weights(weights)), tuple(biases), source)
    from pezo.golden.engine.network import NetEngine

    try:
        NetEngine(config).load_biases(list(biases))
    except ValueError as exc:
        raise ValueError(f"the model's biases do not fit the int32 accumulator: {exc}") from None
    return net


def import_onnx(path, x_train, name: str | None = None) -> tuple[NetFile, list[FloatLayer]]:
    """Import the float ONNX model at ``path``, calibrated on ``x_train`` (float features): the int8 network
    and the float layers it was made from."""
    path = Path(path)
    model = load_onnx(path)
    try:
        layers = float_layers(model)
    except ValueError as exc:
        raise ValueError(f"ONNX file {str(path)!r}: {exc}") from None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    name = name or path.stem
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-.")[:64] or "onnx-model"
    try:
        net = quantize_layers(layers, x_train, name, source=f"onnx {path.name} sha256:{digest}")
    except ValueError as exc:
        raise ValueError(f"ONNX file {str(path)!r}: {exc}") from None
    return net, layers


def accuracies(net: NetFile, layers: list[FloatLayer], x, y) -> dict:
    """Float vs int8 accuracy of an import on float features ``x`` and labels ``y``: the float model (NumPy,
    float64), and the engine's integer forward on the inputs quantised at the network's input exponent."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y)
    float_acc = float((float_forward(layers, x).argmax(axis=1) == y).mean())
    q = quantize_rint(x, net.input_exponent)
    logits = forward_network(net.config, q, list(net.weights), [b if b is not None else 0 for b in net.biases])
    return {"float_accuracy": float_acc, "int8_accuracy": float((logits.argmax(axis=1) == y).mean())}
