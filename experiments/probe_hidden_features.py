"""How much the fixed hidden features of rt-mlp's start carry: the float linear probe (L2 on validation) on
the int8 hidden activations of the calibrated start, ``hidden_init`` normal vs pca, before any training.
Question: does the label-free PCA start give ZO better features to train on? Answer: its features alone carry
a probe of 71.5 / 72.7 / 74.1 % test against 62.9 / 63.7 / 62.1 % for the normal start (seeds 1-3), close to the
probe on the 384-d inputs (72.6 / 74.6 / 76.2 %); ZO from it is no better (``experiments/screen_rt_mlp.py``,
``pca-*`` runs). Results: ``benchmarks/results/engine_net/screen/hidden_features.{json,md}``. Command:

    .venv/bin/python experiments/probe_hidden_features.py [--seeds 1,2,3]

The features are the engine's own first-layer outputs (``round_shift(x W^T, shift)``, ReLU, int8) of the
start ``init_weights`` builds; the probe is ``golden.lm.probe.fit_linear_probe_val`` on them divided by their
training RMS (as ``probe_head``). Test is reported, never used to choose. Writes
``benchmarks/results/engine_net/screen/hidden_features.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.golden.engine.int8 import round_shift, saturate  # noqa: E402
from pezo.golden.lm.probe import fit_linear_probe_val  # noqa: E402
from pezo.golden.zo.net_config import TUNED_WD  # noqa: E402
from pezo.golden.zo.net_data import float_probe, load_data  # noqa: E402
from pezo.golden.zo.net_init import init_weights  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def hidden_probe(seed: int, hidden_init: str) -> dict:
    cfg = TUNED_WD["rt-mlp"].replace(seed=seed, hidden_init=hidden_init)
    data = load_data(cfg)
    weights, _ = init_weights(cfg, data.x["train"], data)
    layer = cfg.net_config.layers[0]

    def features(split):
        acc = np.asarray(data.x[split], dtype=np.int64) @ weights[0].T
        return saturate(round_shift(acc, layer.shift), 0, 127).astype(np.float64)

    h = {split: features(split) for split in ("train", "val", "test")}
    rms = max(float(np.sqrt(np.mean(np.square(h["train"])))), 1e-12)
    w, b, l2 = fit_linear_probe_val(h["train"] / rms, data.y["train"], h["val"] / rms, data.y["val"], data.classes)
    score = {
        split: float(((h[split] / rms @ w.T + b).argmax(axis=1) == data.y[split]).mean()) for split in ("val", "test")
    }
    return {
        "seed": seed,
        "hidden_init": hidden_init,
        "probe_l2": l2,
        "val_accuracy": score["val"],
        "test_accuracy": score["test"],
        "input_probe_test_accuracy": float_probe(data)["float_probe_test_accuracy"],
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        description="\n\n".join(__doc__.split("\n\n")[:2]), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--out", type=Path, default=RESULTS / "engine_net" / "screen")
    args = ap.parse_args(argv)
    rows = [hidden_probe(int(s), init) for s in args.seeds.split(",") for init in ("normal", "pca")]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hidden_features.json").write_text(json.dumps(rows, indent=1))
    lines = [
        "Float linear probe (L2 on validation) on the fixed int8 hidden features of rt-mlp's start "
        "(`experiments/probe_hidden_features.py`); accuracies in %.",
        "",
        "| seed | hidden_init | val | test | probe on the 384-d inputs (test) |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['seed']} | {r['hidden_init']} | {100 * r['val_accuracy']:.1f} | {100 * r['test_accuracy']:.1f} | "
        f"{100 * r['input_probe_test_accuracy']:.1f} |"
        for r in rows
    ]
    (args.out / "hidden_features.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
