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
