"""ElasticZO's rotated-digits fine-tuning with the CNN (issue 33), end to end with pezo's own tools: the digits-cnn
shape trained in float on the *upright* digits (``golden.zo.float_cnn``, Adam), written as an ONNX model (Conv, Relu,
MaxPool, Flatten, Gemm), imported by ``pezo train-int8 --net model.onnx --data rot30.npz`` (calibrated on the
rotated training split) and fine-tuned on the engine on the digits rotated by 30 degrees, by full ZO and by the
elastic hybrids. Results in ``results.json`` (rotated test accuracy: float model, int8 import, after training).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python experiments/rotated_digits_cnn.py --out build/rotated-cnn \
        [--steps 2000] [--seeds 1,2,3] [--splits full-zo,cls2,cls1]

The float inputs are pixel / 8 - 1 (the digits nets' real input values); the hybrids use the bp_bits that
``SPLIT_DEFAULTS`` holds for digits-cnn (the imported file has another name, so they are passed explicitly).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.cli.main import main as pezo  # noqa: E402
from pezo.golden.engine.conv import hwc_order, kernel_tensor  # noqa: E402
from pezo.golden.engine.nets import NETS  # noqa: E402
from pezo.golden.methods.tasks import _digits, digits_split, rotate_images  # noqa: E402
from pezo.golden.zo.float_cnn import FloatNet, accuracy, softmax_grad  # noqa: E402
from pezo.golden.zo.int8_head import batch_schedule  # noqa: E402
from pezo.golden.zo.net_config import SPLIT_DEFAULTS  # noqa: E402

DEGREES = 30
NET = "digits-cnn"


def inputs(images, idx, degrees) -> np.ndarray:
    return (rotate_images(images[idx], degrees).reshape(len(idx), 64) / 8.0 - 1.0).astype(np.float32)


def pretrain(x, y, seed: int, steps: int = 1500, lr: float = 3e-3) -> FloatNet:
    """The float digits-cnn on upright digits: Adam on the cross-entropy (``float_cnn``'s step), batch 128."""
    net = FloatNet(NETS[NET], seed)
    m = [np.zeros_like(w) for w in net.weights]
    v = [np.zeros_like(w) for w in net.weights]
    for t, rows in enumerate(batch_schedule(len(y), 128, steps, seed), start=1):
        grads = net.backward(softmax_grad(net.forward(x[rows]), y[rows]))
        for w, g, mi, vi in zip(net.weights, grads, m, v):
            mi[:] = 0.9 * mi + 0.1 * g
            vi[:] = 0.999 * vi + 0.001 * g * g
            w -= lr * (mi / (1 - 0.9**t)) / (np.sqrt(vi / (1 - 0.999**t)) + 1e-8)
    return net


def to_onnx(net: FloatNet):
    """The float CNN as ONNX (opset 17): input [N, 1, 8, 8]; Conv (no bias) / Relu / MaxPool per conv layer, Flatten,
    Gemm (transB) / Relu per dense layer. The float net holds the engine's layout (kernel rows (ky, kx, ci), the dense
    layer after the convolutions over the HWC flattening): turned into ONNX's kernels and NCHW Flatten columns."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, current = [], [], "input"
    for i, (layer, w) in enumerate(zip(net.layers, net.weights)):
        name = f"w{i}"
        if layer.kind == "conv":
            k = layer.kernel
            inits.append(numpy_helper.from_array(kernel_tensor(w, layer).astype(np.float32), name))
            nodes.append(
                helper.make_node(
                    "Conv", [current, name], [f"c{i}"], name=f"conv{i}", kernel_shape=[k, k], pads=[layer.padding] * 4
                )
            )
            nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
            nodes.append(
                helper.make_node("MaxPool", [f"r{i}"], [f"p{i}"], name=f"pool{i}", kernel_shape=[2, 2], strides=[2, 2])
            )
            current = f"p{i}"
            if net.layers[i + 1].kind != "conv":
                nodes.append(helper.make_node("Flatten", [current], ["flat"], name="flatten", axis=1))
                current = "flat"
            continue
        if i and net.layers[i - 1].kind == "conv":  # HWC columns -> the NCHW Flatten's
            w = w[:, np.argsort(hwc_order(*net.layers[i - 1].out_shape))]
        inits.append(numpy_helper.from_array(w.astype(np.float32), name))
        last = i == len(net.layers) - 1
        nodes.append(
            helper.make_node("Gemm", [current, name], ["output" if last else f"g{i}"], name=f"fc{i}", transB=1)
        )
        if not last:
            nodes.append(helper.make_node("Relu", [f"g{i}"], [f"a{i}"], name=f"fcrelu{i}"))
            current = f"a{i}"
    graph = helper.make_graph(
        nodes,
        "digits_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 8, 8])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pezo-experiment")
    model.ir_version = 8
    return model


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="a new directory for the files")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--seeds", default="1")
    p.add_argument("--splits", default="full-zo,cls2,cls1")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=False)
    images, labels = _digits()
    results = []
    for seed in (int(s) for s in args.seeds.split(",")):
        idx = dict(zip(("train", "val", "test"), digits_split(seed)))
        up = {n: inputs(images, i, 0) for n, i in idx.items()}
        rot = {n: inputs(images, i, DEGREES) for n, i in idx.items()}
        y = {n: labels[i] for n, i in idx.items()}
        net = pretrain(up["train"], y["train"], seed)
        model = args.out / f"cnn-upright-s{seed}.onnx"
        model.write_bytes(to_onnx(net).SerializeToString())
        data = args.out / f"rot{DEGREES}-s{seed}.npz"
        np.savez(data, **{f"{k}_{n}": d[n] for k, d in (("x", rot), ("y", y)) for n in idx})
        base = {"seed": seed, "upright_test_float": accuracy(net, up["test"], y["test"])}
        base[f"rot{DEGREES}_test_float"] = accuracy(net, rot["test"], y["test"])
        for split in args.splits.split(","):
            out = args.out / f"trained-s{seed}-{split}"
            argv = ["train-int8", "--net", str(model), "--data", str(data), "--steps", str(args.steps)]
            argv += ["--eval-every", "250", "--split-seed", str(seed), "--split", split, "--quiet", "--out", str(out)]
            bits = SPLIT_DEFAULTS.get((NET, split), {}).get("bp_bits")
            argv += ["--bp-bits", str(bits)] if bits else []
            print("pezo " + " ".join(argv), file=sys.stderr)
            if pezo(argv) != 0:
                raise SystemExit(f"pezo {' '.join(argv)} failed")
            summary = json.loads((out / "summary.json").read_text())
            results.append(
                {
                    **base,
                    "split": split,
                    "bp_bits": bits,
                    f"rot{DEGREES}_test_int8_import": summary["onnx_import"]["test_int8_accuracy"],
                    f"rot{DEGREES}_test_after_onchip_training": summary["test_accuracy"],
                    "steps": args.steps,
                }
            )
            print(json.dumps(results[-1]), file=sys.stderr)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
