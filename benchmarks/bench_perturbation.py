"""Generation rate of every perturbation family, in segments shaped like a MiniLM layer + head.

    .venv/bin/python benchmarks/bench_perturbation.py [--dim 1771776] [--repeats 5] [--json]

Each family's ``perturbation(index)`` is generated the way the MeZO trainer does it: one ``segment``
call per parameter tensor, in parameter order, with consecutive offsets. The tensors are those of
MiniLM's last encoder layer (hidden 384, FFN 1536: Q, K, V, O 384x384 + 384 biases, LayerNorm weight and
bias, FFN 1536x384 + 1536 bias, 384x1536 + 384 bias, LayerNorm) followed by a classification head
(384x384 + 384, 384x2 + 2): ``partition(dim)`` takes them in order until ``dim`` values, cutting the
last one short (the default d = 1 771 776 ends inside the second FFN matrix), and pads a larger ``dim``
with 384-value tensors. The rate is the best of ``--repeats`` runs (a distinct index each, after one
warm-up), in values per second; the last column is each family's rate over gaussian's. The PeZO team's
goal: PeZO generation >= 10x Gaussian.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.golden.zo.families import FAMILIES, make_sampler  # noqa: E402

HIDDEN, FFN = 384, 1536
TENSORS = (
    [HIDDEN * HIDDEN, HIDDEN] * 4
    + [HIDDEN, HIDDEN]
    + [FFN * HIDDEN, FFN, HIDDEN * FFN, HIDDEN]
    + [HIDDEN, HIDDEN]
    + [HIDDEN * HIDDEN, HIDDEN, HIDDEN * 2, 2]
)
"""MiniLM last layer + classification head, in parameter order (1 923 074 values)."""
DEFAULT_DIM = 1_771_776


def partition(dim: int) -> list[int]:
    """Tensor sizes summing to ``dim``: ``TENSORS`` in order, the last one cut at dim, padded with
    384-value tensors beyond their total."""
    sizes, total = [], 0
    for size in TENSORS:
        size = min(size, dim - total)
        if size == 0:
            break
        sizes.append(size)
        total += size
    while total < dim:
        sizes.append(min(HIDDEN, dim - total))
        total += sizes[-1]
    return sizes


def generate(sampler, index: int, sizes: list[int]) -> float:
    """Generate one perturbation segment by segment, as the trainer does (returns a checksum)."""
    offset = 0
    acc = 0.0
    for size in sizes:
        z = sampler.segment(index, offset, size)
        acc += float(z[0])
        offset += size
    return acc


def measure(family: str, dim: int, repeats: int, sizes: list[int]) -> dict:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sampler = make_sampler(family, dim)
    setup = time.perf_counter() - start
    generate(sampler, 0, sizes)  # warm-up (tables, caches, page faults)
    best = float("inf")
    for r in range(repeats):
        start = time.perf_counter()
        generate(sampler, r + 1, sizes)
        best = min(best, time.perf_counter() - start)
    return {
        "family": family,
        "options": sampler.options(),
        "setup_s": setup,
        "best_s": best,
        "values_per_s": dim / best,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=DEFAULT_DIM, help="perturbation size d (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per family, best kept (default 5)")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    if args.dim < 1 or args.repeats < 1:
        parser.error("--dim and --repeats must be >= 1")
    sizes = partition(args.dim)
    rows = [measure(f, args.dim, args.repeats, sizes) for f in args.families]
    base = next((r["values_per_s"] for r in rows if r["family"] == "gaussian"), None)
    for row in rows:
        row["ratio_to_gaussian"] = row["values_per_s"] / base if base else None
    result = {
        "dim": args.dim,
        "segments": len(sizes),
        "repeats": args.repeats,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": rows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"d = {args.dim} values in {len(sizes)} segments, best of {args.repeats}, numpy {np.__version__}\n")
    print("| family | options | setup (s) | time (ms) | values/s | x gaussian |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        opts = ", ".join(f"{k}={v}" for k, v in row["options"].items()) or "-"
        ratio = f"{row['ratio_to_gaussian']:.1f}" if row["ratio_to_gaussian"] else "-"
        print(
            f"| {row['family']} | {opts} | {row['setup_s']:.2f} | {row['best_s'] * 1e3:.2f} | "
            f"{row['values_per_s'] / 1e6:.0f} M | {ratio} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
