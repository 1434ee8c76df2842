"""A model someone else trained, fine-tuned on the engine on a user's data set, from the command line (issue 31).
Question: does ElasticZO's rotated-digits task work end to end with pezo's own tools only -- scikit-learn's
MLPClassifier (64-32-10, ReLU) trained on the *upright* digits, exported by skl2onnx, imported by
``pezo net import``, fine-tuned by ``pezo train-int8`` (the engine's on-chip ZO step, bit-exact with the RTL) on
the digits rotated by 30 degrees, exported as QDQ ONNX and run by onnxruntime? Answer (seed 1, 2 000 steps):
rotated test accuracy float 34.2 %, int8 after import 35.0 %, after on-chip training 80.5 %, the exported model
in onnxruntime 80.5 % (upright test of the float model: 96.4 %). Command:

    .venv/bin/python experiments/rotated_digits_onnx.py --out build/rotated-digits [--steps 2000]

It writes ``model.onnx``, ``rot30.npz`` (``x_train, y_train, x_val, y_val, x_test, y_test``: the methods' digits
split of seed 1, pixels 0..16, rotated by ``golden.methods.tasks.rotate_images``) and ``trained/`` (what
``pezo train-int8 --out`` writes) into --out, prints the commands it runs and ``results.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.cli.main import main as pezo  # noqa: E402
from pezo.golden.methods.tasks import _digits, digits_split, rotate_images  # noqa: E402

DEGREES = 30


def write_inputs(out: Path, seed: int) -> float:
    """model.onnx (trained upright) and rot30.npz; returns the float model's upright test accuracy."""
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier

    images, labels = _digits()
    splits = dict(zip(("train", "val", "test"), digits_split(seed)))

    def pixels(idx, degrees):
        return rotate_images(images[idx], degrees).reshape(len(idx), 64).astype(np.float32)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs/adam convergence notes
        model = MLPClassifier((32,), max_iter=300, random_state=0).fit(
            pixels(splits["train"], 0), labels[splits["train"]]
        )
    (out / "model.onnx").write_bytes(to_onnx(model, pixels(splits["train"], 0)[:1]).SerializeToString())
    arrays = {}
    for name, idx in splits.items():
        arrays[f"x_{name}"], arrays[f"y_{name}"] = pixels(idx, DEGREES), labels[idx]
    np.savez(out / f"rot{DEGREES}.npz", **arrays)
    return float(model.score(pixels(splits["test"], 0), labels[splits["test"]]))


def run(argv: list[str]) -> None:
    print("pezo " + " ".join(argv), file=sys.stderr)
    if pezo(argv) != 0:
        raise SystemExit(f"pezo {' '.join(argv)} failed")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="a new directory for the files")
    p.add_argument("--steps", type=int, default=2000, help="on-chip ZO steps (default 2000)")
    p.add_argument("--seed", type=int, default=1, help="the digits split (default 1)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=False)
    upright = write_inputs(args.out, args.seed)
    model, data, trained = args.out / "model.onnx", args.out / f"rot{DEGREES}.npz", args.out / "trained"
    run(
        ["train-int8", "--net", str(model), "--data", str(data), "--steps", str(args.steps), "--eval-every", "100"]
        + ["--split-seed", str(args.seed), "--quiet", "--out", str(trained)]
    )
    summary = json.loads((trained / "summary.json").read_text())
    import onnxruntime as ort

    arrays = np.load(data)
    session = ort.InferenceSession(str(trained / "model.onnx"), providers=["CPUExecutionProvider"])
    label = session.run(["label"], {"input": arrays["x_test"]})[0]
    results = {
        "upright_test_float": upright,
        f"rot{DEGREES}_test_float": summary["onnx_import"]["test_float_accuracy"],
        f"rot{DEGREES}_test_int8_import": summary["onnx_import"]["test_int8_accuracy"],
        f"rot{DEGREES}_test_after_onchip_training": summary["test_accuracy"],
        f"rot{DEGREES}_test_onnxruntime_export": float((label == arrays["y_test"]).mean()),
        "steps": args.steps,
        "seed": args.seed,
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
