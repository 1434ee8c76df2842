"""The ZO engine across array shapes: cycles per ZO step against the analytical bound, MAC utilisation,
and Yosys resources (LUT, FF, BRAM36, DSP48E2) -- the data behind the default 8 x 8 size.

    .venv/bin/python benchmarks/bench_engine.py [--strategy pregen] [--shapes 8x8,16x4,4x16,16x8,8x16]
                                                [--out benchmarks/results/engine]

Per shape R x C (384 -> 2 head, batch 16): two ZO steps on random int8 data run on Amaranth's simulator
against golden (``sim.engine_host``; the run fails on any mismatch) give the cycles per step; the bound
is ``EngineConfig.cycle_bound`` (2 B |W| / (R C) + |W| / C + pipeline latency); MAC utilisation is the
useful MAC cycles over the measured ones. Writes shapes.{json,csv,md,png} to --out.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.boards.flow.report import engine_report  # noqa: E402
from pezo.golden.engine.zo_engine import EngineConfig  # noqa: E402
from pezo.golden.zo.int8_head import Int8TrainConfig  # noqa: E402
from pezo.sim.amaranth_sim import run_engine_host  # noqa: E402
from pezo.sim.engine_host import zo_training  # noqa: E402

COLUMNS = (
    "shape",
    "strategy",
    "rows",
    "cols",
    "macs",
    "cycles_per_step",
    "cycle_bound",
    "cycle_ratio",
    "mac_utilisation",
    "LUT",
    "FF",
    "BRAM36",
    "DSP",
    "analytical_DSP",
    "analytical_BRAM36",
)


def measure(cfg: EngineConfig, steps: int = 2) -> dict:
    rng = np.random.default_rng(0)
    xs = rng.integers(-128, 128, (steps, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (steps, cfg.array.batch))
    result = run_engine_host(cfg, lambda io: zo_training(io, Int8TrainConfig(engine=cfg), xs, ys, -9))
    if not result["match"]:
        raise AssertionError(f"{cfg}: RTL differs from golden: {result['mismatches']}")
    r = engine_report(cfg)
    cycles = result["cycles_per_step"]
    return {
        "shape": f"{cfg.array.rows}x{cfg.array.cols}",
        "strategy": cfg.stream.strategy,
        "rows": cfg.array.rows,
        "cols": cfg.array.cols,
        "macs": cfg.array.macs,
        "cycles_per_step": cycles,
        "cycle_bound": cfg.cycle_bound(),
        "cycle_ratio": round(cycles / cfg.cycle_bound(), 4),
        "mac_utilisation": round(cfg.useful_mac_cycles() / cycles, 4),
        **{k: r[k] for k in ("LUT", "FF", "BRAM36", "DSP", "analytical_DSP", "analytical_BRAM36")},
    }


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    labels = [r["shape"] for r in rows]
    a.bar(labels, [r["cycles_per_step"] for r in rows], label="measured")
    a.plot(labels, [r["cycle_bound"] for r in rows], "k_", markersize=30, label="bound")
    a.set_ylabel("cycles per ZO step (B = 16, 384 -> 2)")
    a.legend()
    b.bar([x + " LUT/10" for x in labels], [r["LUT"] / 10 for r in rows])
    b.bar([x + " DSP" for x in labels], [r["DSP"] for r in rows])
    b.tick_params(axis="x", rotation=60, labelsize=7)
    b.set_title("Yosys xcup")
    fig.suptitle(f"ZO engine shapes ({rows[0]['strategy']} stream)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strategy", default="pregen", choices=("otf", "pregen"))
    parser.add_argument("--shapes", default="8x8,16x4,4x16,16x8,8x16")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/engine"))
    args = parser.parse_args(argv)
    rows = []
    for shape in args.shapes.split(","):
        r, c = (int(v) for v in shape.lower().split("x"))
        rows.append(measure(EngineConfig().replace(strategy=args.strategy, rows=r, cols=c)))
        print(json.dumps(rows[-1]), file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "shapes.json").write_text(json.dumps(rows, indent=2) + "\n")
    with open(args.out / "shapes.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| shape | MACs | cycles/step | bound | ratio | MAC util. | LUT | FF | BRAM36 | DSP |", "|" + "---|" * 10]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['macs']} | {r['cycles_per_step']:.0f} | {r['cycle_bound']} | "
            f"{r['cycle_ratio']:.3f} | {100 * r['mac_utilisation']:.1f}% | {r['LUT']} | {r['FF']} | "
            f"{r['BRAM36']:g} | {r['DSP']} |"
        )
    (args.out / "shapes.md").write_text("\n".join(lines) + "\n")
    plot(rows, args.out / "shapes.png")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
