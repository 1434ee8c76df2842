"""Estimator checks behind the seed methods: OUT/estimators.{json,md} (--out, default benchmarks/results/methods).

* Poor Man's norm inflation E||g_hat||^2/||g||^2 = (Q+d-1)/Q and cosine ~ sqrt(Q/(Q+d-1)) for Rademacher
  (NumPy and XORShift32) and the PeZO families (``golden.zo_checks.rge_norm_inflation``);
* Stepping Forward's E[sign(grad . z) z] = sqrt(2/pi) grad/||grad|| = 0.798 (``sign_spsa_expectation``);
* ElasticZO-INT8: how often the integer-only CE sign (Eq. 12) equals the float CE sign over real
  (theta, z, batch) triples -- the weights of an ElasticZO-INT8 run on digits, every step logged.

    .venv/bin/python benchmarks/bench_estimators.py [--quick] [--out benchmarks/results/methods]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

OUT = Path(__file__).parent / "results" / "methods"


def main() -> None:
    from pezo.golden.methods.base import MethodConfig
    from pezo.golden.methods.checks import rge_norm_inflation, sign_spsa_expectation
    from pezo.golden.methods.elasticzo import ElasticZOInt8
    from pezo.golden.methods.tasks import load

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 trials instead of 300 (a smoke run)")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default benchmarks/results/methods)")
    args = parser.parse_args()
    trials = 50 if args.quick else 300
    t0 = time.time()
    inflation = []
    for family, opts in (
        ("rademacher", {}),
        ("xorshift-rademacher", {}),
        ("gaussian", {}),
        ("uniform", {}),
        ("pezo-pregen", {"pool_size": 4095}),
        ("pezo-otf", {}),
    ):
        for dim, q in ((1000, 100), (100, 100), (4096, 50)):
            r = rge_norm_inflation(dim, q, trials if dim < 4096 else trials // 3, seed=5, family=family, **opts)
            inflation.append(r)
    signs = []
    for family in ("gaussian", "rademacher", "pezo-otf", "pezo-pregen"):
        signs.append(sign_spsa_expectation(50, 4000 if args.quick else 40000, seed=1, family=family))
    agreement = []
    for batch in (32, 256):
        for split in ("full-zo", "cls2"):
            config = MethodConfig(
                method="elasticzo-int8", split=split, batch_size=batch, steps=200 if args.quick else 1500
            )
            task = load("digits", 1)
            method = ElasticZOInt8(config, task)
            import numpy as np

            rng = np.random.default_rng(3)

            def next_batch():  # noqa: B023 - called within this iteration only
                idx = rng.choice(len(task.y_train), batch, replace=False)  # noqa: B023 - called in this iteration
                return task.x_train[idx], task.y_train[idx]  # noqa: B023

            for step in range(config.steps):
                method.step(step, next_batch)
            log = method.sign_log
            nonzero = [(f, i) for f, i in log if f != 0]
            agreement.append(
                {
                    "batch": batch,
                    "split": split,
                    "steps": len(log),
                    "agreement": method.sign_agreement(),
                    "agreement_nonzero_float": float(np.mean([f == i for f, i in nonzero])) if nonzero else None,
                    "integer_zero": float(np.mean([i == 0 for _, i in log])),
                    "opposite": float(np.mean([f * i < 0 for f, i in log])),
                }
            )
    result = {
        "inflation": inflation,
        "sign_spsa": signs,
        "int8_sign_agreement": agreement,
        "seconds": time.time() - t0,
        "command": "benchmarks/bench_estimators.py" + (" --quick" if args.quick else ""),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "estimators.json").write_text(json.dumps(result, indent=1, default=float))
    lines = [
        "## Norm inflation and cosine of the forward-difference RGE (linear loss)",
        "",
        "| family | d | Q | E z^2 | inflation | (Q+d-1)/Q | inflation / (E z^2)^2 | cosine | sqrt(Q/(Q+d-1)) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in inflation:
        lines.append(
            f"| {r['family']} | {r['dim']} | {r['queries']} | {r['second_moment']:.3f} | "
            f"{r['measured_inflation']:.3f} | {r['expected_inflation']:.3f} | {r['normalized_inflation']:.3f} | "
            f"{r['measured_cosine']:.4f} | {r['expected_cosine']:.4f} |"
        )
    lines += [
        "",
        "## sign-SPSA: ||E[sign(grad.z) z]|| (d = 50)",
        "",
        "| family | norm | sqrt(2/pi)=0.7979 | cosine |",
        "|---|---|---|---|",
    ]
    for r in signs:
        lines.append(f"| {r['family']} | {r['measured_norm']:.4f} | {r['expected_norm'] or '-'} | {r['cosine']:.5f} |")
    lines += [
        "",
        "## ElasticZO-INT8: integer CE sign (Eq. 12) vs float CE sign, every step of a digits run",
        "",
        "| batch | split | steps | agree | agree (float sign != 0) | integer sign 0 | opposite |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in agreement:
        lines.append(
            f"| {r['batch']} | {r['split']} | {r['steps']} | {100 * r['agreement']:.1f} % | "
            f"{100 * r['agreement_nonzero_float']:.1f} % | {100 * r['integer_zero']:.1f} % | "
            f"{100 * r['opposite']:.1f} % |"
        )
    (args.out / "estimators.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
