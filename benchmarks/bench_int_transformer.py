"""Fidelity of MiniLM's last encoder layer in the integer encoder layer (issue 55, golden half).

    .venv/bin/python benchmarks/bench_int_transformer.py [--tasks rotten_tomatoes,bbc_news] [--seeds 1,2,3]
        [--shots 256] [--tokens 64] [--out benchmarks/results/int_transformer]

Per task and seed (``pezo.golden.zo.int_encoder.measure_fidelity``): the few-shot split of the trainers
(``pezo.golden.lm.data.few_shot_split``: ``shots`` per class for training and for validation, 1 000 test texts),
texts truncated to ``tokens`` (the trainer's default ``max_length``, 64), layer 6 quantised on the training split
only; then on every split the cosine of the integer layer's mean-pooled output against the float layer's (MiniLM's
float32 ``run_layer``), the per-token cosine over every real token, and the float linear probe's test accuracy
(L2 chosen on validation, ``fit_linear_probe_val``) fitted on integer features and on float features, plus the
float-feature probe applied to integer test features. Writes ``fidelity-<tasks>.json`` and ``fidelity-<tasks>.md``
in ``--out`` (BBC News has 386 articles in its smallest class, so it runs at ``--shots 64`` as its sweep).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.golden.engine.transformer.layer import MINILM, EncoderConfig  # noqa: E402
from pezo.golden.zo.int_encoder import measure_fidelity  # noqa: E402


def _table(runs: list[dict]) -> str:
    head = (
        "| task | seed | pooled cos test (mean / min) | token cos test (mean / p01) | probe float | probe int "
        "| gap (points) | float probe on int | truncated (train/val/test) | seconds |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
    )
    rows = []
    for r in runs:
        pc, tc, p, t = r["pooled_cosine"]["test"], r["token_cosine"]["test"], r["probe"], r["truncated_count"]
        rows.append(
            f"| {r['task']} | {r['seed']} | {pc['mean']:.4f} / {pc['min']:.4f} | {tc['mean']:.4f} / {tc['p01']:.4f} "
            f"| {100 * p['float']['test_accuracy']:.1f} | {100 * p['int']['test_accuracy']:.1f} "
            f"| {r['accuracy_gap_points']:+.1f} | {100 * p['float_probe_on_int']:.1f} "
            f"| {t['train']}/{t['val']}/{t['test']} | {r['seconds']:.0f} |"
        )
    by_task: dict[str, list[dict]] = {}
    for r in runs:
        by_task.setdefault(r["task"], []).append(r)
    for task, rs in by_task.items():
        if len(rs) > 1:
            f = np.mean([r["probe"]["float"]["test_accuracy"] for r in rs])
            i = np.mean([r["probe"]["int"]["test_accuracy"] for r in rs])
            c = np.mean([r["pooled_cosine"]["test"]["mean"] for r in rs])
            rows.append(
                f"| {task} | mean of {len(rs)} | {c:.4f} | | {100 * f:.1f} | {100 * i:.1f} | {100 * (f - i):+.1f} "
                "| | | |"
            )
    return head + "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="rotten_tomatoes")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--shots", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=MINILM.tokens)
    ap.add_argument("--out", default="benchmarks/results/int_transformer")
    args = ap.parse_args(argv)
    shape = EncoderConfig(MINILM.d, MINILM.heads, MINILM.ffn, args.tokens, MINILM.rows, MINILM.cols)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    runs = []
    for task in args.tasks.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            r = measure_fidelity(task, args.shots, seed, shape)
            runs.append(r)
            print(
                f"{task} seed {seed}: pooled cos {r['pooled_cosine']['test']['mean']:.4f}, probe float "
                f"{r['probe']['float']['test_accuracy']:.3f} int {r['probe']['int']['test_accuracy']:.3f} "
                f"({r['seconds']:.0f} s)",
                flush=True,
            )
    command = "python benchmarks/bench_int_transformer.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    total = time.perf_counter() - start
    stem = "fidelity-" + args.tasks.replace(",", "-")
    (out / f"{stem}.json").write_text(json.dumps({"command": command, "seconds": total, "runs": runs}, indent=1))
    md = f"# Integer MiniLM layer 6: fidelity\n\n`{command}` ({total:.0f} s, one thread)\n\n" + _table(runs)
    (out / f"{stem}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
