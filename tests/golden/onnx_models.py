"""Small ONNX models for the import / export tests, built with onnx.helper (not a test module)."""

import numpy as np


def torch_style_mlp(weights, biases, flatten=True, extra=None):
    """An MLP in the exact form ``torch.onnx.export`` (TorchScript exporter, opset 17) writes for
    ``nn.Sequential(nn.Flatten(), nn.Linear, nn.ReLU(), ..., nn.Linear)``: input ``input`` [N, K] float,
    ``Flatten(axis=1)``, then per layer ``Gemm(x, W, b, alpha=1, beta=1, transB=1)`` with W [out, in] as
    initializers named ``<i>.weight`` / ``<i>.bias``, ``Relu`` between; output ``output``. ``extra``: nodes
    appended after the logits (list of (op, attrs)) to test the recognised output ops."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, current = [], [], "input"
    if flatten:
        nodes.append(helper.make_node("Flatten", [current], ["/0/Flatten_output_0"], name="/0/Flatten", axis=1))
        current = "/0/Flatten_output_0"
    for i, (w, b) in enumerate(zip(weights, biases)):
        idx = 1 + 2 * i
        out = f"/{idx}/Gemm_output_0"
        inits += [
            numpy_helper.from_array(np.asarray(w, dtype=np.float32), f"{idx}.weight"),
            numpy_helper.from_array(np.asarray(b, dtype=np.float32), f"{idx}.bias"),
        ]
        nodes.append(
            helper.make_node(
                "Gemm",
                [current, f"{idx}.weight", f"{idx}.bias"],
                [out],
                name=f"/{idx}/Gemm",
                alpha=1.0,
                beta=1.0,
                transB=1,
            )
        )
        current = out
        if i < len(weights) - 1:
            nodes.append(helper.make_node("Relu", [current], [f"/{idx + 1}/Relu_output_0"], name=f"/{idx + 1}/Relu"))
            current = f"/{idx + 1}/Relu_output_0"
    for j, (op, attrs) in enumerate(extra or ()):
        out = f"/out{j}"
        nodes.append(helper.make_node(op, [current], [out], name=f"/{op}_{j}", **attrs))
        current = out
    nodes[-1].output[0] = "output"
    graph = helper.make_graph(
        nodes,
        "main_graph",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", np.asarray(weights[0]).shape[1]])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["n", "k"])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    model.ir_version = 8
    return model


def random_mlp(widths, seed=0):
    """Float weights [out, in] and biases of an MLP with the given widths."""
    rng = np.random.default_rng(seed)
    weights = [rng.normal(0, 1 / np.sqrt(a), (b, a)) for a, b in zip(widths[:-1], widths[1:])]
    biases = [rng.normal(0, 0.1, b) for b in widths[1:]]
    return weights, biases


def torch_style_cnn(convs, dense, image=(1, 8, 8), pool="MaxPool", pads=1, strides=1):
    """A small CNN in the form ``torch.onnx.export`` writes for ``nn.Sequential(Conv2d, ReLU, MaxPool2d(2), ...,
    Flatten, Linear, ReLU, ..., Linear)``: input ``input`` [N, C, H, W] float; per conv (W [out, in, k, k], b) a
    ``Conv`` (pads, strides), ``Relu`` and a 2x2 ``pool`` (None: no pool); ``Flatten``; then ``dense`` as
    ``torch_style_mlp``'s Gemm layers."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, current = [], [], "input"
    for i, (w, b) in enumerate(convs):
        inits += [
            numpy_helper.from_array(np.asarray(w, dtype=np.float32), f"conv{i}.weight"),
            numpy_helper.from_array(np.asarray(b, dtype=np.float32), f"conv{i}.bias"),
        ]
        k = np.asarray(w).shape[2]
        nodes.append(
            helper.make_node(
                "Conv",
                [current, f"conv{i}.weight", f"conv{i}.bias"],
                [f"/conv{i}/out"],
                name=f"/conv{i}/Conv",
                kernel_shape=[k, k],
                pads=[pads] * 4,
                strides=[strides] * 2,
            )
        )
        nodes.append(helper.make_node("Relu", [f"/conv{i}/out"], [f"/relu{i}/out"], name=f"/relu{i}/Relu"))
        current = f"/relu{i}/out"
        if pool:
            nodes.append(
                helper.make_node(
                    pool, [current], [f"/pool{i}/out"], name=f"/pool{i}/{pool}", kernel_shape=[2, 2], strides=[2, 2]
                )
            )
            current = f"/pool{i}/out"
    nodes.append(helper.make_node("Flatten", [current], ["/flat/out"], name="/flat/Flatten", axis=1))
    current = "/flat/out"
    for i, (w, b) in enumerate(dense):
        inits += [
            numpy_helper.from_array(np.asarray(w, dtype=np.float32), f"fc{i}.weight"),
            numpy_helper.from_array(np.asarray(b, dtype=np.float32), f"fc{i}.bias"),
        ]
        out = "output" if i == len(dense) - 1 else f"/fc{i}/out"
        nodes.append(
            helper.make_node("Gemm", [current, f"fc{i}.weight", f"fc{i}.bias"], [out], name=f"/fc{i}/Gemm", transB=1)
        )
        current = out
        if i < len(dense) - 1:
            nodes.append(helper.make_node("Relu", [current], [f"/fcrelu{i}/out"], name=f"/fcrelu{i}/Relu"))
            current = f"/fcrelu{i}/out"
    graph = helper.make_graph(
        nodes,
        "main_graph",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", *image])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["n", "k"])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    model.ir_version = 8
    return model


def random_cnn(seed=0, channels=(1, 4, 8), dense=(32, 16, 10), k=3):
    """Float conv kernels [out, in, k, k] with biases and dense layers for ``torch_style_cnn``."""
    rng = np.random.default_rng(seed)
    convs = [
        (rng.normal(0, 1 / np.sqrt(a * k * k), (b, a, k, k)), rng.normal(0, 0.1, b))
        for a, b in zip(channels[:-1], channels[1:])
    ]
    fcs = [(rng.normal(0, 1 / np.sqrt(a), (b, a)), rng.normal(0, 0.1, b)) for a, b in zip(dense[:-1], dense[1:])]
    return convs, fcs
