"""What-if (a hardware change, not in the engine): ZO that perturbs only the last layer of rt-mlp.
Question: with the hidden layer frozen at the PCA start, would ZO of the 128 last-layer weights alone (a
per-layer perturbation mask) beat ZO of the whole network? Answer: no: the validation accuracy of the average
of the last 8 checkpoints is 73.4 / 70.9 % (test 70.3 / 72.9 %) against 76.4 / 69.9 % for ``TUNED_WD`` (seeds
1 / 2), so the mask is not built. Results: ``benchmarks/results/engine_net/screen/whatif/freeze-*.json``.
Command:

    .venv/bin/python experiments/whatif_rt_mlp_freeze.py [--seeds 1,2] [--steps 4000] [--hidden-init pca]

The engine perturbs every weight of the network (MeZO's fixed global order). With a per-layer perturbation
mask -- p = 0 for the weights of frozen layers, the stream still advancing over them -- the hidden layer
would keep its start and ZO would train the 128 weights of the last layer alone (d = 128 instead of
24 704). This script emulates it with the golden engine (``NetEngine.train_step`` with the first layer's
perturbation zeroed before both passes and the update) on ``TUNED_WD["rt-mlp"]`` without decay, pregen
stream, from the ``--hidden-init`` start, and reports validation and test of the host's average of the
last 1 / 4 / 8 checkpoints -- evidence for the report only (selection on validation). Runs are cached in
``benchmarks/results/engine_net/screen/whatif/``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.golden.engine.network import NetEngine  # noqa: E402
from pezo.golden.zo.int8_head import batch_schedule  # noqa: E402
from pezo.golden.zo.net_config import TUNED_WD  # noqa: E402
from pezo.golden.zo.net_data import float_probe, load_data  # noqa: E402
from pezo.golden.zo.net_eval import average_weights, engine_accuracy  # noqa: E402
from pezo.golden.zo.net_init import init_weights  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def run(seed: int, steps: int, hidden_init: str) -> dict:
    cfg = TUNED_WD["rt-mlp"].replace(
        strategy="pregen", seed=seed, steps=steps, hidden_init=hidden_init, wd_shift=0, average_last=0
    )
    data = load_data(cfg)
    weights, _ = init_weights(cfg, data.x["train"], data)
    engine = NetEngine(cfg.net_config, weights=weights)
    frozen = cfg.net_config.layers[0].weights
    draw = engine.next_perturbation

    def last_layer_only():
        p = draw().copy()
        p[:frozen] = 0
        engine.perturbation = p
        return p

    engine.next_perturbation = last_layer_only
    checkpoints, curve = [], []
    for step, rows in enumerate(batch_schedule(len(data.y["train"]), cfg.array.batch, steps, seed)):
        engine.train_step(data.x["train"][rows], data.y["train"][rows], cfg.loss_config)
        if (step + 1) % cfg.eval_every == 0:
            checkpoints.append(engine.flat.copy())
            curve.append((step + 1, engine_accuracy(engine, data.x["val"], data.y["val"])))
    out = {
        "seed": seed,
        "steps": steps,
        "hidden_init": hidden_init,
        "curve": curve,
        "probe_test": float_probe(data)["float_probe_test_accuracy"],
    }
    for n in (1, 4, 8):
        engine.load_weights(average_weights(checkpoints[-n:]))
        out[f"average_{n}"] = {
            "val": engine_accuracy(engine, data.x["val"], data.y["val"]),
            "test": engine_accuracy(engine, data.x["test"], data.y["test"]),
        }
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        description="\n\n".join(__doc__.split("\n\n")[:2]), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--hidden-init", default="pca", choices=("normal", "pca"))
    ap.add_argument("--out", type=Path, default=RESULTS / "engine_net" / "screen" / "whatif")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        path = args.out / f"freeze-hidden-{args.hidden_init}-{args.steps}-s{seed}.json"
        r = json.loads(path.read_text()) if path.exists() else run(seed, args.steps, args.hidden_init)
        path.write_text(json.dumps(r, indent=1))
        print(
            f"freeze hidden ({args.hidden_init}) s{seed}: average of the last 8 checkpoints val "
            f"{r['average_8']['val']:.3f} test {r['average_8']['test']:.3f} (probe {r['probe_test']:.3f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
