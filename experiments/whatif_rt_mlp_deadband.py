"""What-if (a hardware change, not in the engine): a dead band on the on-chip sign g for rt-mlp.
Question: would skipping the steps whose loss difference is small (g = 0 when |L+ - L-| <= T) help rt-mlp?
Answer: no: the validation average of the last 8 checkpoints is 75.0 / 69.7 at T = 2 048, 76.2 / 70.9 at 4 096
and 65.6 / 50.0 at 16 384 (the weights move on 7 and 0 of 4 000 steps) against 76.4 / 69.9 without it (seeds
1 / 2): within the noise, so the comparator is not built. Results:
``benchmarks/results/engine_net/screen/whatif/deadband*.json``. Command:

    .venv/bin/python experiments/whatif_rt_mlp_deadband.py --deadband T [--seeds 1,2] [--steps 4000]

Sign-SPSA (``g_mode="sign"``) moves every perturbed weight by one LSB each step, however small the loss
difference d = L+ - L- is, and one LSB is the smallest step the update's arithmetic has (``TUNED``). A
dead band -- g = 0 when |d| <= T, +-g_lr otherwise -- would skip the steps whose sign is least reliable:
one comparator and one register in the loss unit (``hw.engine.net_engine``), not in the engine today.
This script emulates it with the golden engine's own pieces (``NetEngine.forward_zo``, the hinge loss of
``golden.engine.loss``, ``NetEngine.update``) on ``TUNED_WD["rt-mlp"]`` with the pregen stream, and
reports validation (best, second-half mean, the host's checkpoint averages) -- evidence for the report
only. Runs are cached in ``benchmarks/results/engine_net/screen/whatif/``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.golden.engine.loss import hinge_loss  # noqa: E402
from pezo.golden.engine.network import NetEngine  # noqa: E402
from pezo.golden.zo.int8_head import batch_schedule  # noqa: E402
from pezo.golden.zo.net_config import TUNED_WD  # noqa: E402
from pezo.golden.zo.net_data import float_probe, load_data  # noqa: E402
from pezo.golden.zo.net_eval import average_weights, engine_accuracy  # noqa: E402
from pezo.golden.zo.net_init import init_weights  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def run(deadband: int, seed: int, steps: int, batch: int) -> dict:
    cfg = TUNED_WD["rt-mlp"].replace(strategy="pregen", seed=seed, steps=steps, batch=batch, average_last=0)
    data = load_data(cfg)
    weights, _ = init_weights(cfg, data.x["train"], data)
    engine = NetEngine(cfg.net_config, weights=weights)
    curve, ckpts, moved, t0 = [], [], 0, time.perf_counter()
    for step, rows in enumerate(batch_schedule(len(data.y["train"]), batch, steps, seed)):
        x, y = data.x["train"][rows], data.y["train"][rows]
        plus, minus = engine.forward_zo(x)
        d = hinge_loss(plus, y, cfg.margin) - hinge_loss(minus, y, cfg.margin)
        g = int(np.sign(d)) * cfg.g_lr if abs(d) > deadband else 0
        moved += g != 0
        engine.update(g, cfg.wd_shift, cfg.wd_every)  # the engine's decay counter
        if (step + 1) % cfg.eval_every == 0:
            curve.append((step + 1, engine_accuracy(engine, data.x["val"], data.y["val"])))
            ckpts.append(engine.flat.copy())
    best = max(range(len(curve)), key=lambda i: curve[i][1])
    half = [v for s, v in curve if s > steps / 2]
    avg = {}
    for n in (4, 8, len(ckpts) // 2):
        engine.load_weights(average_weights(ckpts[-n:]))
        avg[str(n)] = engine_accuracy(engine, data.x["val"], data.y["val"])
    engine.load_weights(ckpts[best])
    return {
        "deadband": deadband,
        "seed": seed,
        "steps": steps,
        "batch": batch,
        "moved_steps": int(moved),
        "best_val": curve[best][1],
        "best_step": curve[best][0],
        "late_val": float(np.mean(half)),
        "checkpoint_average_val": avg,
        "test_at_best_val": engine_accuracy(engine, data.x["test"], data.y["test"]),
        "probe_test": float_probe(data)["float_probe_test_accuracy"],
        "curve": curve,
        "seconds": time.perf_counter() - t0,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        description="\n\n".join(__doc__.split("\n\n")[:2]), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--deadband", type=int, required=True)
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--out", type=Path, default=RESULTS / "engine_net" / "screen" / "whatif")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        path = args.out / f"deadband{args.deadband}-b{args.batch}-{args.steps}-s{seed}.json"
        r = json.loads(path.read_text()) if path.exists() else run(args.deadband, seed, args.steps, args.batch)
        path.write_text(json.dumps(r, indent=1))
        print(
            f"deadband {args.deadband} s{seed}: moved {r['moved_steps']}/{r['steps']} best val {r['best_val']:.3f} "
            f"late {r['late_val']:.3f} avg {r['checkpoint_average_val']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
